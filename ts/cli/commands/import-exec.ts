/** `probe import …`, loaded only when one runs: import.ts declares the commands' options and help. */
import type { BaseContext } from 'clipanion';

import { importJsonl } from '../../import/jsonl.js';
import { importTensorboard } from '../../import/tensorboard.js';
import { importTrl } from '../../import/trl.js';
import { importVerl } from '../../import/verl.js';
import type { ImportResult } from '../../import/write-import.js';
import { terminalLine } from '../terminal-text.js';

export type ImportFormat = 'trl' | 'verl' | 'jsonl' | 'tensorboard';

export interface ImportArgs {
  source: string;
  out: string;
  algorithm: string | undefined;
  /** `probe import jsonl` only, where clipanion requires it. */
  map?: string;
  json: boolean;
  context: BaseContext;
}

function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** What was skipped: source lines, or TensorBoard's records and non-scalar summaries. */
function skippedText(r: ImportResult): string {
  if (r.files === undefined || r.records === undefined) return `${count(r.skipped_lines, 'line')} skipped`;
  const nonScalar = Object.values(r.skipped_non_scalar ?? {});
  const summaries = nonScalar.reduce((a, b) => a + b, 0);
  const others = summaries > 0 ? ` (non-scalar summaries: ${summaries} under ${count(nonScalar.length, 'tag')})` : '';
  return `${count(r.records, 'record')} read from ${count(r.files.length, 'event file')}, ${r.skipped_lines} without a scalar skipped${others}`;
}

function runImporter(format: ImportFormat, command: ImportArgs): ImportResult {
  const options = { algorithm: command.algorithm };
  switch (format) {
    case 'trl':
      return importTrl(command.source, command.out, options);
    case 'verl':
      return importVerl(command.source, command.out, options);
    case 'jsonl':
      return importJsonl(command.source, command.out, { ...options, map: command.map! });
    case 'tensorboard':
      return importTensorboard(command.source, command.out, options);
  }
}

export async function execImport(format: ImportFormat, command: ImportArgs): Promise<number> {
  const r = runImporter(format, command);
  // never silent: what the import read past goes to stderr, with --json too
  for (const warning of r.warnings ?? []) command.context.stderr.write(`probe: warning: ${terminalLine(warning)}\n`);
  if (command.json) {
    command.context.stdout.write(`${JSON.stringify(r)}\n`);
    return 0;
  }
  const rounded = Object.keys(r.resolution).length;
  const line =
    `imported ${r.rows} row${r.rows === 1 ? '' : 's'} (steps ${r.first_step} … ${r.last_step}, ${r.columns.length} columns` +
    `${rounded ? `, ${rounded} printed rounded` : ''}) from ${r.source} into ${r.out_dir} (${r.format}, algorithm ${r.algorithm}); ` +
    skippedText(r);
  command.context.stdout.write(`${terminalLine(line)}\n`);
  return 0;
}
