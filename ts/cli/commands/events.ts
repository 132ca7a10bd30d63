import { Command, Option } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { ProbeCommand } from '../base-command.js';
import { isoSeconds } from '../format.js';
import { listOption, valueOption } from '../named-options.js';
import { isPositive } from '../option-values.js';
import { terminalLine } from '../terminal-text.js';

export class EventsCommand extends ProbeCommand {
  static paths = [['events']];
  static usage = Command.Usage({
    description: "List a recording's events (a torn last line from a crash is skipped)",
    examples: [
      ['All events', '$0 events runs/exp1'],
      ['Only crashes and signals', '$0 events runs/exp1 --kind crash --kind signal'],
      ['The last 20 as JSON', '$0 events runs/exp1 --last 20 --json'],
    ],
  });

  run = Option.String({ name: 'run' });
  kinds = listOption('--kind', { value: 'KIND', description: 'Only events of this kind' });
  last = valueOption('--last', { value: 'N', description: 'Only the last N events', validator: isPositive });
  json = Option.Boolean('--json', false, { description: 'Print a JSON array instead of text' });

  async exec(): Promise<number> {
    const reader = RunReader.open(this.run);
    // filtered while streaming: a huge events.jsonl never sits in memory whole
    const events = reader.events({ kinds: this.kinds.length ? this.kinds : undefined, last: this.last });
    if (this.json) {
      this.context.stdout.write(`${JSON.stringify(events, null, 2)}\n`);
      return 0;
    }
    for (const e of events) {
      const step = e.step === null ? '' : ` step ${e.step}`;
      const rank = e.rank ? ` rank ${e.rank}` : '';
      // one event a line: a newline in a kind or message is escaped, not a line of its own
      this.context.stdout.write(`${terminalLine(`${isoSeconds(e.timestamp)}  ${e.kind}${step}${rank}  ${e.message}`)}\n`);
    }
    return 0;
  }
}
