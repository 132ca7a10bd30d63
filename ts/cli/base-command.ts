import { Command } from 'clipanion';

import { RlprobeError } from '../errors.js';

/**
 * A probe command: an RlprobeError (not a run, newer format, IO…) becomes a one-line
 * message on stderr and exit code 1 instead of a stack trace.
 */
export abstract class ProbeCommand extends Command {
  abstract exec(): Promise<number>;

  async execute(): Promise<number> {
    try {
      return await this.exec();
    } catch (error) {
      if (error instanceof RlprobeError) {
        this.context.stderr.write(`probe: ${error.message}\n`);
        return 1;
      }
      throw error;
    }
  }
}
