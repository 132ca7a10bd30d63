/** `probe watch`, loaded only when it runs: watch.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { formatFinding } from '../../doctor/format.js';
import { RunWatcher } from '../../doctor/watch.js';
import { EXIT_CODES } from '../exit-codes.js';
import { terminalLine } from '../terminal-text.js';

export interface WatchArgs {
  run: string;
  json: boolean;
  interval: number;
  haltOn: 'critical' | 'warn' | 'never';
  minConfidence: number;
  haltPid: number | undefined;
  haltCommand: string | undefined;
  context: BaseContext;
}

export async function execWatch(command: WatchArgs): Promise<number> {
  const interval = command.interval;
  const watcher = new RunWatcher(command.run, {
    haltOn: command.haltOn,
    minConfidence: command.minConfidence,
    haltPid: command.haltPid,
    haltCommand: command.haltCommand,
  });
  const out = command.context.stdout;
  const stop = new AbortController();
  const onSigint = () => stop.abort();
  process.once('SIGINT', onSigint);
  let halted = false;
  let announced = false;
  try {
    await watcher.follow(
      interval,
      (r) => {
        if (!announced && !command.json) {
          command.context.stderr.write(`watching ${terminalLine(watcher.runDir)} (${r.points} logged points so far)\n`);
          announced = true;
        }
        for (const f of r.findings) out.write(command.json ? `${JSON.stringify({ type: 'finding', ...f })}\n` : `${formatFinding(f)}\n`);
        if (r.halt) {
          halted = true;
          out.write(command.json ? `${JSON.stringify({ type: 'halt', code: r.halt.finding.code, actions: r.halt.actions })}\n` : `${terminalLine(`HALT on ${r.halt.finding.code}: ${r.halt.actions.join('; ')}`)}\n`);
        }
        if (r.ended && !command.json) command.context.stderr.write(`run ended after ${r.points} logged points\n`);
      },
      stop.signal,
    );
  } finally {
    process.off('SIGINT', onSigint);
  }
  return halted ? EXIT_CODES.findings : EXIT_CODES.ok;
}
