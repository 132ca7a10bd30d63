/**
 * The command groups (`probe trial …`, `probe span …`, `probe import …`): `probe trial`,
 * `probe trial --help` and `-h` list the group's commands with their usage and description
 * (ProbeCli.usage renders it), where clipanion alone answers "Command not found".
 */
import { Command } from 'clipanion';
import type { BaseContext, CommandClass } from 'clipanion';

import { EXIT_CODES } from './exit-codes.js';

export interface CommandGroup {
  /** The first word of the group's commands. */
  name: string;
  description: string;
}

export const COMMAND_GROUPS: readonly CommandGroup[] = [
  { name: 'trial', description: 'Harbor trials: capture one into a run, stage and deliver it when the run is out of reach, list, show and expand captures' },
  { name: 'span', description: 'The spans of a run: rollouts, turns, tool calls, …' },
  { name: 'import', description: "Import another trainer's metrics log as a recording" },
];

/** The group a command class stands for, if it is a group's own command. */
export function groupOf(command: unknown): CommandGroup | null {
  const klass = command instanceof Command ? command.constructor : command;
  return (klass as { group?: CommandGroup } | null)?.group ?? null;
}

/** The command at the group's bare path: prints the group's listing. No `usage`, so the root help leaves it out. */
export function groupCommand(group: CommandGroup): CommandClass<BaseContext> {
  return class GroupCommand extends Command<BaseContext> {
    static paths = [[group.name]];
    static group = group;

    async execute(): Promise<number> {
      this.context.stdout.write(this.cli.usage(this, { detailed: true }));
      return EXIT_CODES.ok;
    }
  };
}
