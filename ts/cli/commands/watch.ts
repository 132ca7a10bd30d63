import { Command, Option } from 'clipanion';

import { formatFinding } from '../../doctor/format.js';
import { RunWatcher } from '../../doctor/watch.js';
import { RlprobeError } from '../../errors.js';
import { ProbeCommand } from '../base-command.js';

/** Exit code after a halt: the run was stopped on a finding. */
export const HALTED_EXIT_CODE = 2;

export class WatchCommand extends ProbeCommand {
  static paths = [['watch']];
  static usage = Command.Usage({
    description: 'Follow a live run and print findings as they appear; optionally halt it on a critical one',
    details: `
      Re-diagnoses the run whenever new step parts appear (and through its compaction and end),
      printing each finding once. On the first finding at \`--halt-on\` severity it records an
      \`auto_halt\` event in the run, sends SIGTERM to \`--halt-pid\` and runs \`--halt-command\`
      (with the finding as JSON in RLPROBE_FINDING). Exits when the run ends: code 0, or
      ${HALTED_EXIT_CODE} after a halt. Start it before the run: it waits for the run directory.
    `,
    examples: [
      ['Follow a run', '$0 watch runs/exp1'],
      ['Stop the trainer on a critical finding', '$0 watch runs/exp1 --halt-pid 4242'],
      ['Cancel a Slurm job instead', '$0 watch runs/exp1 --halt-command "scancel $SLURM_JOB_ID"'],
    ],
  });

  run = Option.String({ name: 'run' });
  json = Option.Boolean('--json', false, { description: 'One JSON object per finding (and per halt)' });
  interval = Option.String('--interval', '2000', { description: 'Milliseconds between looks at the run' });
  haltOn = Option.String('--halt-on', 'critical', { description: 'Severity that halts: critical, warn or never' });
  minConfidence = Option.String('--min-confidence', '0.7', { description: 'A finding below this confidence never halts' });
  haltPid = Option.String('--halt-pid', { description: 'Send SIGTERM to this process on a halt' });
  haltCommand = Option.String('--halt-command', { description: 'Run this shell command on a halt' });

  async exec(): Promise<number> {
    const interval = Number(this.interval);
    if (!Number.isFinite(interval) || interval < 10) throw bad('--interval', this.interval, 'a number of milliseconds ≥ 10');
    if (!['critical', 'warn', 'never'].includes(this.haltOn)) throw bad('--halt-on', this.haltOn, 'critical, warn or never');
    const minConfidence = Number(this.minConfidence);
    if (!(minConfidence >= 0 && minConfidence <= 1)) throw bad('--min-confidence', this.minConfidence, 'a number in 0..1');
    const haltPid = this.haltPid === undefined ? undefined : Number(this.haltPid);
    if (haltPid !== undefined && !(Number.isSafeInteger(haltPid) && haltPid > 0)) throw bad('--halt-pid', this.haltPid, 'a process id');
    const watcher = new RunWatcher(this.run, {
      haltOn: this.haltOn as 'critical' | 'warn' | 'never',
      minConfidence,
      haltPid,
      haltCommand: this.haltCommand,
    });
    const out = this.context.stdout;
    const stop = new AbortController();
    const onSigint = () => stop.abort();
    process.once('SIGINT', onSigint);
    let halted = false;
    let announced = false;
    try {
      await watcher.follow(
        interval,
        (r) => {
          if (!announced && !this.json) {
            this.context.stderr.write(`watching ${watcher.runDir} (${r.points} logged points so far)\n`);
            announced = true;
          }
          for (const f of r.findings) out.write(this.json ? `${JSON.stringify({ type: 'finding', ...f })}\n` : `${formatFinding(f)}\n`);
          if (r.halt) {
            halted = true;
            out.write(this.json ? `${JSON.stringify({ type: 'halt', code: r.halt.finding.code, actions: r.halt.actions })}\n` : `HALT on ${r.halt.finding.code}: ${r.halt.actions.join('; ')}\n`);
          }
          if (r.ended && !this.json) this.context.stderr.write(`run ended after ${r.points} logged points\n`);
        },
        stop.signal,
      );
    } finally {
      process.off('SIGINT', onSigint);
    }
    return halted ? HALTED_EXIT_CODE : 0;
  }
}

function bad(option: string, value: unknown, expected: string): RlprobeError {
  return new RlprobeError('RLPROBE_INVALID_QUERY', `invalid ${option} ${JSON.stringify(value)}: expected ${expected}`);
}
