/** `probe trial capture`, loaded only when it runs: trial-capture.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { captureTrial } from '../../trials/capture.js';
import { terminalLine } from '../terminal-text.js';
import { captureLine, loadParserModules } from './trial-common.js';

export interface TrialCaptureArgs {
  trialDir: string;
  run: string;
  step: number;
  sampleId: string | undefined;
  groupId: string | undefined;
  contextPairs: Array<[string, string]>;
  maxFileBytes: number | undefined;
  maxSpans: number | undefined;
  parserModules: string[];
  json: boolean;
  context: BaseContext;
}

export async function execTrialCapture(command: TrialCaptureArgs): Promise<number> {
  await loadParserModules(command.parserModules);
  const m = await captureTrial(command.trialDir, {
    run: command.run,
    step: command.step,
    sampleId: command.sampleId,
    groupId: command.groupId,
    context: Object.fromEntries(command.contextPairs),
    maxFileBytes: command.maxFileBytes,
    maxSpans: command.maxSpans,
  });
  command.context.stdout.write(command.json ? `${JSON.stringify(m, null, 2)}\n` : `${terminalLine(captureLine(m, command.run))}\n`);
  return 0;
}
