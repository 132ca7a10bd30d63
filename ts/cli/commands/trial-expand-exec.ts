/** `probe trial expand`, loaded only when it runs: trial-expand.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { expandCapture } from '../../trials/capture.js';
import { terminalLine } from '../terminal-text.js';
import { captureLine, loadParserModules } from './trial-common.js';

export interface TrialExpandArgs {
  run: string;
  capture: string;
  file: string | undefined;
  parserModules: string[];
  json: boolean;
  context: BaseContext;
}

export async function execTrialExpand(command: TrialExpandArgs): Promise<number> {
  await loadParserModules(command.parserModules);
  const t = RunReader.open(command.run).trial(command.capture);
  const m = expandCapture(t.run_dir, t.capture_key, command.file);
  command.context.stdout.write(command.json ? `${JSON.stringify(m, null, 2)}\n` : `${terminalLine(captureLine(m, command.run).replace(/^captured/, 'expanded'))}\n`);
  return 0;
}
