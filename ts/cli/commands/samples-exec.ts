/** `probe samples`, loaded only when it runs: samples.ts declares its options and help. */
import { UsageError } from 'clipanion';
import type { BaseContext } from 'clipanion';

import { diagnose } from '../../doctor/diagnose.js';
import { findingByCode } from '../../doctor/finding-by-code.js';
import { RunReader } from '../../reader/run-reader.js';
import type { SampleQuery } from '../../reader/sample-stream.js';
import { CAPTURE_REASONS } from '../../schema/sample-record.js';
import { orList } from '../option-values.js';
import { formatSample, sampleJsonLine } from './sample-text.js';

/**
 * Refuses a --reason that no sample can have: the standard reasons always pass; one of the
 * caller's own (`logSamples` with `select: false` keeps it) only when the run has it.
 */
function checkReasons(reader: RunReader, reasons: readonly string[]): void {
  const own = [...new Set(reasons.filter((r) => !(CAPTURE_REASONS as readonly string[]).includes(r)))];
  if (own.length === 0) return;
  const found = new Set(reader.sampleTextValues('capture_reason', { reason: own }));
  const unknown = own.find((r) => !found.has(r));
  if (unknown === undefined) return;
  // the error path only: every reason the run has, to list them
  const inRun = reader.sampleTextValues('capture_reason').filter((r) => r !== '');
  const valid = [...CAPTURE_REASONS, ...inRun.filter((r) => !(CAPTURE_REASONS as readonly string[]).includes(r))];
  throw new UsageError(`invalid --reason ${JSON.stringify(unknown)}: expected ${orList(valid)}`);
}

export interface SamplesArgs {
  run: string;
  step: number | undefined;
  steps: [number, number] | undefined;
  reasons: string[];
  group: string | undefined;
  ranks: number[];
  limit: number;
  reward: { rewardMin?: number; rewardMax?: number } | undefined;
  truncated: boolean | undefined;
  text: string | undefined;
  aroundFinding: string | undefined;
  full: boolean;
  json: boolean;
  context: BaseContext;
}

export async function execSamples(command: SamplesArgs): Promise<number> {
  const reader = RunReader.open(command.run);
  const query: SampleQuery = {};
  if (command.step !== undefined) query.step = command.step;
  if (command.steps !== undefined) query.stepRange = command.steps;
  if (command.reasons.length) {
    checkReasons(reader, command.reasons);
    query.reason = command.reasons;
  }
  if (command.group !== undefined) query.group = command.group;
  if (command.reward !== undefined) Object.assign(query, command.reward);
  if (command.truncated !== undefined) query.truncated = command.truncated;
  if (command.text !== undefined) query.text = command.text;
  if (command.aroundFinding !== undefined) query.aroundFinding = findingByCode(diagnose(reader, { samples: false }), command.aroundFinding);
  if (command.ranks.length) query.rank = command.ranks;
  const out = command.context.stdout;
  let printed = 0;
  for (const s of reader.samples(query)) {
    if (command.limit > 0 && printed === command.limit) {
      if (!command.json) out.write(`… stopped at ${command.limit} samples (--limit 0 prints all)\n`);
      break;
    }
    out.write(command.json ? sampleJsonLine(s) : formatSample(s, command.full));
    printed++;
  }
  if (printed === 0 && !command.json) out.write('no samples match\n');
  return 0;
}
