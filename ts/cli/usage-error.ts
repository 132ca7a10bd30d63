/**
 * A wrong command line, as printed on stderr with exit code 64: `probe: <what is wrong>`,
 * then the command's usage when the command is known. clipanion's own errors (unknown
 * option or command, missing argument) and a bad option value (ts/cli/option-values.ts)
 * read alike: `invalid --last "0": expected an integer ≥ 1`.
 */
import { Command } from 'clipanion';

import { terminalText } from './terminal-text.js';

/** clipanion marks the errors of a command line (UsageError, UnknownSyntaxError, AmbiguousSyntaxError). */
export function isCommandLineError(error: unknown): error is Error {
  return error instanceof Error && typeof (error as { clipanion?: unknown }).clipanion === 'object';
}

/**
 * The command an option's validation error belongs to: clipanion attaches it to the error
 * under a symbol of its own (not exported), so it is found by value.
 */
export function commandOfError(error: Error): Command | null {
  for (const key of Object.getOwnPropertySymbols(error)) {
    const value = (error as unknown as Record<symbol, unknown>)[key];
    if (value instanceof Command) return value;
  }
  return null;
}

/** clipanion's "Invalid value for --x: expected … (got "v")" as `invalid --x "v": expected …`. */
function houseStyle(message: string): string {
  const m = /^Invalid value for (\S+): ([\s\S]*) \(got ([\s\S]*)\)$/.exec(message);
  if (m) return `invalid ${m[1]} ${m[3]}: ${m[2]}`;
  return message.charAt(0).toLowerCase() + message.slice(1);
}

/** The text for stderr; `usage` is the command's usage line (`$ probe …`), when known. */
export function usageErrorText(error: Error, usage: string | null): string {
  // the message can echo what was typed (an option name, a value): escaped like any user text
  const message = terminalText(houseStyle(error.message).trimEnd());
  return `probe: ${message}\n${usage ? `\n${usage.trimEnd()}\n` : ''}`;
}
