import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { listOption, valueOption } from '../named-options.js';

export class TrialExpandCommand extends ProbeCommand {
  static paths = [['trial', 'expand']];
  static usage = Command.Usage({
    category: 'Trials',
    description: 'Expand a captured trial\'s trajectory into spans again, with the parsers available now',
    details:
      'A trajectory in a format no parser recognised at capture time is stored raw. Once a parser exists (a --parser-module, ' +
      'or registerTrajectoryParser in the API), this re-reads the capture\'s own copy of its files and rewrites its spans. ' +
      'Span ids are derived from the run, the capture key and each span\'s path, so expanding again changes nothing.',
    examples: [
      ['With a parser for another format', '$0 trial expand runs/exp1 hello__AbC1234.3f2a9c1d0b7e --parser-module ./acme-parser.mjs'],
      ['Expand a different collected file', '$0 trial expand runs/exp1 hello__AbC1234 --file agent/session.json --parser-module ./p.mjs'],
    ],
  });

  run = Option.String({ name: 'run' });
  capture = Option.String({ name: 'capture' });
  file = valueOption('--file', { value: 'PATH', description: 'Expand this collected file (trial-relative) instead of agent/trajectory.json' });
  parserModules = listOption('--parser-module', { value: 'FILE', description: 'A JS module registering trajectory parsers' });
  json = Option.Boolean('--json', false, { description: 'Print the rewritten capture manifest as JSON' });

  async exec(): Promise<number> {
    const { execTrialExpand } = await import('./trial-expand-exec.js');
    return execTrialExpand(this);
  }
}
