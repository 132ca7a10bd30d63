/** `probe trial stage`, loaded only when it runs: trial-stage.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { stageTrial } from '../../trials/staging.js';
import { terminalLine } from '../terminal-text.js';
import { ledgerText, rewardText } from './trial-common.js';

export interface TrialStageArgs {
  trialDir: string;
  to: string;
  step: number;
  sampleId: string | undefined;
  groupId: string | undefined;
  contextPairs: Array<[string, string]>;
  maxFileBytes: number | undefined;
  maxSpans: number | undefined;
  json: boolean;
  context: BaseContext;
}

export async function execTrialStage(command: TrialStageArgs): Promise<number> {
  const { dir, staged } = await stageTrial(command.trialDir, {
    to: command.to,
    step: command.step,
    sampleId: command.sampleId,
    groupId: command.groupId,
    context: Object.fromEntries(command.contextPairs),
    maxFileBytes: command.maxFileBytes,
    maxSpans: command.maxSpans,
  });
  if (command.json) command.context.stdout.write(`${JSON.stringify({ dir, ...staged }, null, 2)}\n`);
  else command.context.stdout.write(`${terminalLine(`staged ${JSON.stringify(staged.trial.name)} for step ${staged.step} in ${dir}: ${rewardText(staged.trial.rewards)}; files ${ledgerText(staged.collection)}; delivery pending`)}\n`);
  return 0;
}
