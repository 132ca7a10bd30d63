/** `probe diff`, loaded only when it runs: diff.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { formatRunDiff } from '../../diff/format.js';
import { diffRuns } from '../../diff/run-diff.js';
import { RunReader } from '../../reader/run-reader.js';

export interface DiffArgs {
  a: string;
  b: string;
  json: boolean;
  context: BaseContext;
}

export async function execDiff(command: DiffArgs): Promise<number> {
  const d = await diffRuns(RunReader.open(command.a), RunReader.open(command.b));
  command.context.stdout.write(command.json ? `${JSON.stringify(d, null, 2)}\n` : `${formatRunDiff(d)}\n`);
  return 0;
}
