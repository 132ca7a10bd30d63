/** `probe serve`, loaded only when it runs: serve.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { isLoopback } from '../../serve/options.js';
import { startServe } from '../../serve/server.js';
import { EXIT_CODES } from '../exit-codes.js';
import { terminalLine } from '../terminal-text.js';

export interface ServeArgs {
  dirs: string[];
  port: number;
  host: string;
  interval: number;
  diagnose: boolean;
  context: BaseContext;
}

export async function execServe(command: ServeArgs): Promise<number> {
  const err = command.context.stderr;
  // listening for Ctrl-C before saying where it serves: a signal sent on reading that line finds the handler
  let stop = () => {};
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const serving = await startServe({ roots: command.dirs, port: command.port, host: command.host, pollMs: command.interval, diagnose: command.diagnose });
    if (!isLoopback(command.host)) {
      err.write(`warning: serving on ${terminalLine(command.host)}: anyone who can reach this machine can read these runs (there is no authentication)\n`);
    }
    const folders = serving.ctx.index.roots.map((r) => terminalLine(r)).join(', ');
    err.write(`serving ${serving.runs} run${serving.runs === 1 ? '' : 's'} under ${folders} at ${serving.url}\n`);
    if (!command.diagnose) err.write("the server's own diagnoses are off: findings come from the recorders' live doctors (and a diff's own)\n");
    err.write('press Ctrl-C to stop\n');
    await stopped;
    await serving.close();
    err.write('stopped\n');
    return EXIT_CODES.ok;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
