import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { listOption, valueOption } from '../named-options.js';
import { isPositive } from '../option-values.js';

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
    const { execEvents } = await import('./events-exec.js');
    return execEvents(this);
  }
}
