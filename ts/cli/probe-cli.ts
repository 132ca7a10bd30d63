/**
 * clipanion's Cli, with what `probe` needs on top: a wrong command line goes to stderr
 * with exit code 64 (clipanion prints it on stdout with 1, like a failure); colour only
 * for a terminal without NO_COLOR; option values named in every usage line; and the
 * listing of a command group.
 */
import { Cli } from 'clipanion';
import type { BaseContext, ColorFormat, Command, CommandClass } from 'clipanion';

import { wantsColour } from './colour.js';
import { COMMAND_GROUPS, groupOf } from './command-groups.js';
import type { CommandGroup } from './command-groups.js';
import { EXIT_CODES } from './exit-codes.js';
import { nameOptionValues } from './named-options.js';
import type { UsageBuilder } from './named-options.js';
import { terminalLine } from './terminal-text.js';
import { commandOfError, isCommandLineError, usageErrorText } from './usage-error.js';

export class ProbeCli extends Cli<BaseContext> {
  /**
   * Colour for the run in progress, from its context (run() sets it). Every coloured text
   * goes through format(), including clipanion's help command, which asks for no colour
   * setting of its own.
   */
  private colored = false;

  register(commandClass: CommandClass<BaseContext>): void {
    super.register(commandClass);
    const registration = this.registrations.get(commandClass);
    if (registration) nameOptionValues(registration.builder as unknown as UsageBuilder);
  }

  // `void` as clipanion declares it (a context-less run), so this overrides both its overloads
  async run(input: Command<BaseContext> | string[], userContext?: Partial<BaseContext> | void): Promise<number> {
    const context: BaseContext = { ...Cli.defaultContext, ...userContext };
    this.colored = wantsColour(context);
    if (!Array.isArray(input)) return super.run(input, context);
    let command: Command<BaseContext>;
    try {
      command = this.process(input, context);
    } catch (error) {
      if (!isCommandLineError(error)) throw error;
      const group = this.unknownSubcommandOf(input);
      if (group) {
        context.stderr.write(`probe: ${terminalLine(`no command "${group.name} ${input[1]}"`)}; the ${group.name} commands:\n\n${this.groupUsage(group, false)}`);
        return EXIT_CODES.usage;
      }
      const of = commandOfError(error);
      context.stderr.write(usageErrorText(error, of ? this.usage(of, { colored: false }) : null));
      return EXIT_CODES.usage;
    }
    return super.run(command, context);
  }

  format(colored?: boolean): ColorFormat {
    return super.format((colored ?? true) && this.colored);
  }

  usage(command: CommandClass<BaseContext> | Command<BaseContext> | null = null, opts: { colored?: boolean; detailed?: boolean; prefix?: string } = {}): string {
    const group = groupOf(command);
    return group ? this.groupUsage(group, opts.colored) : super.usage(command, opts);
  }

  /** The group of `probe <group> <word> …` when no command of the group is called <word>. */
  private unknownSubcommandOf(input: string[]): CommandGroup | null {
    const group = COMMAND_GROUPS.find((g) => g.name === input[0]);
    if (!group || input.length < 2 || input[1].startsWith('-')) return null;
    for (const klass of this.registrations.keys()) {
      if (klass.paths?.some((p) => p.length === 2 && p[0] === group.name && p[1] === input[1])) return null;
    }
    return group;
  }

  /** A group's description, then each of its commands: usage line and description. */
  private groupUsage(group: CommandGroup, colored?: boolean): string {
    const f = this.format(colored);
    let out = `${group.description}\n\n${f.header('Usage')}\n\n${f.bold('$ ')}${this.binaryName} ${group.name} <command>\n\n${f.header('Commands')}\n`;
    for (const klass of this.registrations.keys()) {
      if (klass.usage === undefined || !klass.paths?.some((p) => p.length > 1 && p[0] === group.name)) continue;
      out += `\n  ${f.bold(this.getUsageByRegistration(klass).usage)}\n    ${klass.usage.description ?? ''}\n`;
    }
    out += `\nEach command's options and examples: ${f.code(`${this.binaryName} ${group.name} <command> --help`)}\n`;
    return out;
  }
}
