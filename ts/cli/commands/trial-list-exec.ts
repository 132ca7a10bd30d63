/** `probe trial list`, loaded only when it runs: trial-list.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { terminalLine } from '../terminal-text.js';
import { ledgerText, rewardText, spansText, statusText, trajectoryText } from './trial-common.js';

export interface TrialListArgs {
  run: string;
  step: number | undefined;
  steps: [number, number] | undefined;
  json: boolean;
  context: BaseContext;
}

export async function execTrialList(command: TrialListArgs): Promise<number> {
  const reader = RunReader.open(command.run);
  const trials = reader.trials({ step: command.step, stepRange: command.steps });
  const out = command.context.stdout;
  if (command.json) {
    out.write(`${JSON.stringify(trials)}\n`);
    return 0;
  }
  for (const t of trials) {
    const ids = [t.sample_id ? `sample=${t.sample_id}` : '', t.group_id ? `group=${t.group_id}` : ''].filter(Boolean).join(' ');
    out.write(`${terminalLine(`step ${t.step}  ${t.capture_key}  ${JSON.stringify(t.trial.name)}  ${statusText(t)}  ${rewardText(t.trial.rewards)}${ids ? `  [${ids}]` : ''}`)}\n`);
    out.write(`${terminalLine(`    files ${ledgerText(t.ledger)}; ${trajectoryText(t)}; ${spansText(t)}`)}\n`);
  }
  if (trials.length === 0) out.write(command.step === undefined && command.steps === undefined ? 'no trials captured in this run\n' : 'no trials captured at those steps\n');
  for (const b of reader.brokenTrials()) out.write(`${terminalLine(`unreadable capture ${b.dir}: ${b.error}`)}\n`);
  const unfinished = reader.unfinishedTrials();
  if (unfinished.length) out.write(`${terminalLine(`${unfinished.length} capture(s) unfinished (being written, or interrupted: capture or deliver again): ${unfinished.join(', ')}`)}\n`);
  return 0;
}
