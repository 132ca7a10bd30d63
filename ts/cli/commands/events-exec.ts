/** `probe events`, loaded only when it runs: events.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { isoSeconds } from '../format.js';
import { terminalLine } from '../terminal-text.js';

export interface EventsArgs {
  run: string;
  kinds: string[];
  last: number | undefined;
  json: boolean;
  context: BaseContext;
}

export async function execEvents(command: EventsArgs): Promise<number> {
  const reader = RunReader.open(command.run);
  // filtered while streaming: a huge events.jsonl never sits in memory whole
  const events = reader.events({ kinds: command.kinds.length ? command.kinds : undefined, last: command.last });
  if (command.json) {
    command.context.stdout.write(`${JSON.stringify(events, null, 2)}\n`);
    return 0;
  }
  for (const e of events) {
    const step = e.step === null ? '' : ` step ${e.step}`;
    const rank = e.rank ? ` rank ${e.rank}` : '';
    // one event a line: a newline in a kind or message is escaped, not a line of its own
    command.context.stdout.write(`${terminalLine(`${isoSeconds(e.timestamp)}  ${e.kind}${step}${rank}  ${e.message}`)}\n`);
  }
  return 0;
}
