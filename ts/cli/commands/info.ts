import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';

export class InfoCommand extends ProbeCommand {
  static paths = [['info']];
  static usage = Command.Usage({
    description: 'Summarise a recording: manifest, layout, step range, counts, drops, how it ended',
    details: `
      A part of the run that cannot be read (a damaged file, or something that is not a
      regular file in place of one) is shown as damaged, with the file and what to do, and
      the rest is summarised; the exit code is then 1. Files the recorder did not write
      (or copies of its files) are skipped by every reader and listed as foreign files.
    `,
    examples: [
      ['Summarise a run', '$0 info runs/exp1'],
      ['The same as JSON', '$0 info runs/exp1 --json'],
    ],
  });

  run = Option.String({ name: 'run' });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    const { execInfo } = await import('./info-exec.js');
    return execInfo(this);
  }
}
