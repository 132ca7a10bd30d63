import { statSync } from 'node:fs';

import { Command, Option, UsageError } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';
import { isNumberIn, isPort } from '../option-values.js';

export class ServeCommand extends ProbeCommand {
  static paths = [['serve']];
  static usage = Command.Usage({
    description: 'Serve a live dashboard of the runs under the folders (read-only; localhost by default)',
    details: `
      Finds every run under the folders (nested; runs that start later appear as they do,
      Python rlprobe's too) and serves a web page on http://127.0.0.1:PORT/: the run list with
      filters and status badges, charts of several runs overlaid that update as parts are
      published, the doctor's findings on them, and the samples, span trees, trials and diffs
      behind them. Nothing in the runs is modified. Binding another interface than loopback
      (--host 0.0.0.0) exposes the runs to anyone who can reach the machine: there is no
      authentication. Ctrl-C stops it. See docs/serve.md.
    `,
    examples: [
      ['Serve the runs under runs/', '$0 serve runs'],
      ['Pick a free port', '$0 serve runs --port 0'],
      ['Show only the findings of the recorders\' live doctors', '$0 serve runs --no-diagnose'],
    ],
  });

  dirs = Option.Rest({ name: 'dir' });
  port = valueOption('--port', { value: 'N', description: 'Port to listen on (0: a free one)', default: '6007', validator: isPort });
  host = valueOption('--host', { value: 'HOST', description: 'Interface to listen on', default: '127.0.0.1' });
  diagnose = Option.Boolean('--diagnose', true, { description: "Let the server diagnose runs itself (--no-diagnose: only the recorders' live doctors' findings; a diff still diagnoses its two runs)" });
  interval = valueOption('--interval', { value: 'MS', description: 'Milliseconds between looks at live runs (100..60000)', default: '500', validator: isNumberIn(100, 60_000) });

  async exec(): Promise<number> {
    const dirs = this.dirs.length ? this.dirs : ['.'];
    for (const dir of dirs) {
      let directory = false;
      try {
        directory = statSync(dir).isDirectory();
      } catch {
        // named below
      }
      if (!directory) throw new UsageError(`invalid dir ${JSON.stringify(dir)}: not a directory`);
    }
    if (this.host.trim() === '') throw new UsageError('invalid --host "": expected an interface name or address');
    // imported here: the server (node:http, zod, the doctor) loads only for `probe serve`
    const { execServe } = await import('./serve-exec.js');
    return execServe({ dirs, port: this.port, host: this.host, interval: Math.round(this.interval), diagnose: this.diagnose, context: this.context });
  }
}
