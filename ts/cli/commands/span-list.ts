import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { listOption, valueOption } from '../named-options.js';
import { areKeyValues, areOneOf, isCount, isStepRange } from '../option-values.js';

const SPAN_STATUSES = ['ok', 'error', 'open'] as const;

export class SpanListCommand extends ProbeCommand {
  static paths = [['span', 'list']];
  static usage = Command.Usage({
    description: 'List the spans of a run (rollouts, turns, tool calls, …), or show them as trees',
    details:
      'Each span once, at its last write: a span still running when the run was flushed or crashed reads OPEN. ' +
      'Filters combine with AND. With `--tree`, the whole tree of every matching span is printed, indented, ' +
      'children by start time, with durations, status, labels and key attributes.',
    examples: [
      ['The rollouts of step 212 as trees', '$0 span list runs/exp1 --step 212 --kind rollout --tree'],
      ['Failed tool calls', '$0 span list runs/exp1 --kind tool_call --status error'],
      ['One sample\'s spans', '$0 span list runs/exp1 --label sample=s-17 --tree'],
      ['Everything, for jq', '$0 span list runs/exp1 --limit 0 --json'],
    ],
  });

  run = Option.String({ name: 'run' });
  step = valueOption('--step', { value: 'N', description: 'Only this step', validator: isCount });
  steps = valueOption('--steps', { value: 'FROM..TO', description: 'Only steps FROM..TO (inclusive)', validator: isStepRange });
  kinds = listOption('--kind', { value: 'KIND', description: 'Only this kind: rollout, turn, tool_call, epoch, evaluation, …' });
  roots = listOption('--root', { value: 'ID', description: 'Only the tree with this root span id' });
  ids = listOption('--id', { value: 'ID', description: 'Only this span id' });
  labels = listOption('--label', { value: 'KEY=VALUE', description: 'Only spans with this label (all given must match)', validator: areKeyValues('sample=s-17') });
  status = listOption('--status', { value: 'STATUS', description: `Only this status: ${SPAN_STATUSES.join(', ')}`, validator: areOneOf(SPAN_STATUSES) });
  tree = Option.Boolean('--tree', false, { description: 'Print the trees the matching spans belong to' });
  limit = valueOption('--limit', { value: 'N', description: 'At most N spans (N trees with --tree); 0: all', default: '200', validator: isCount });
  json = Option.Boolean('--json', false, { description: 'Print JSON (an array of spans, or of trees with --tree)' });

  async exec(): Promise<number> {
    const { execSpanList } = await import('./span-list-exec.js');
    return execSpanList(this);
  }
}
