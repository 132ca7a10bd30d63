import { Command } from 'clipanion';

import { RlprobeError } from '../errors.js';
import { EXIT_CODES } from './exit-codes.js';
import { escapingStream, terminalText } from './terminal-text.js';
import { isCommandLineError, usageErrorText } from './usage-error.js';

/** native/index.js's error when no native addon loads (a plain Error with our code). */
function isMissingAddon(error: unknown): boolean {
  return error instanceof Error && (error as { code?: unknown }).code === 'RLPROBE_NATIVE_MISSING';
}

/**
 * A probe command. What it prints on stdout reaches the terminal with control characters
 * escaped (text from a recording can hold escape sequences). Errors go to stderr, never
 * as a bare stack: a wrong command line found while running (a UsageError) exits 64 with
 * the command's usage; an RlprobeError (not a run, newer format, IO…) is one line and
 * exit 1, and so is a native addon that does not load on this machine (its loader's
 * message says what to do); anything else is a bug in probe, shown with its stack, exit 1.
 */
export abstract class ProbeCommand extends Command {
  abstract exec(): Promise<number>;

  async execute(): Promise<number> {
    this.context = { ...this.context, stdout: escapingStream(this.context.stdout) };
    try {
      return await this.exec();
    } catch (error) {
      if (isCommandLineError(error)) {
        this.context.stderr.write(usageErrorText(error, this.cli.usage(this)));
        return EXIT_CODES.usage;
      }
      // the addon loads with the first command that needs it (commands load their code lazily)
      if (error instanceof RlprobeError || isMissingAddon(error)) {
        this.context.stderr.write(`probe: ${terminalText((error as Error).message)}\n`);
        return EXIT_CODES.failure;
      }
      const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
      this.context.stderr.write(`probe: internal error (a bug in probe; please report it with this trace):\n${terminalText(text)}\n`);
      return EXIT_CODES.failure;
    }
  }
}
