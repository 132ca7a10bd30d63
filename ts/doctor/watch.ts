import { spawnSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { RlprobeError } from '../errors.js';
import { processAlive } from '../process/alive.js';
import { RunReader } from '../reader/run-reader.js';
import { diagnose } from './diagnose.js';
import { atLeast } from './finding.js';
import { FindingLedger, diagnosisDue } from './follow.js';
import { formatConfidence } from './format.js';
import type { Finding, Severity } from './finding.js';

export interface WatchOptions {
  /** The least severe finding that halts ('never': only report). */
  haltOn: Severity | 'never';
  /** A finding below this confidence never halts. */
  minConfidence: number;
  /** Send SIGTERM to this process on a halt. */
  haltPid?: number;
  /** Run this shell command on a halt (RLPROBE_FINDING holds the finding as JSON). */
  haltCommand?: string;
}

export interface HaltAction {
  finding: Finding;
  /** What was done, one line each (signal sent, command exit code, failures). */
  actions: string[];
}

export interface TickResult {
  /** Findings not reported by an earlier tick. */
  findings: Finding[];
  halt: HaltAction | null;
  /** The run has ended (closed, exited, crashed or signalled) and was diagnosed after. */
  ended: boolean;
  points: number;
}

/**
 * Follows a run as its parts appear: a tick re-diagnoses when the run grew by a fiftieth
 * since the last diagnosis, and once more when it has ended, and reports only findings not
 * reported before — a code again only when its severity rises or its onset moves past the
 * last step reported. The run has ended when its recorder wrote an ending event (close,
 * exit, crash, signal) or, with `haltPid`, when that process is gone.
 */
export class RunWatcher {
  private fingerprint = '';
  private readonly ledger = new FindingLedger();
  private halted: Finding | null = null;
  private sawEnd = false;
  private rowsDiagnosed = -1;
  points = 0;

  constructor(
    readonly runDir: string,
    private readonly options: WatchOptions,
  ) {}

  /** One look at the run. Throws RLPROBE_NOT_A_RUN until the run has a manifest. */
  tick(): TickResult {
    const reader = RunReader.open(this.runDir);
    // a trainer killed outright (SIGKILL, OOM) writes no ending event: its pid is the sign
    const open = reader.status().state === 'open' && this.trainerAlive();
    const files = reader.storage().files;
    const fingerprint = files.map((f) => `${path.basename(f.path)}:${f.rows}:${f.bytes}`).join('|');
    const rows = files.reduce((a, f) => a + f.rows, 0);
    // ended once the end was seen on two looks with no new steps in between: a writer may
    // publish its last part after its closing event
    const ended = !open && this.sawEnd && fingerprint === this.fingerprint;
    this.sawEnd = !open;
    // re-diagnose as the run grows by a fiftieth (as the live doctor does), and at the end:
    // each look re-reads the run, so looking on every new part would cost O(n²) in all
    const due = diagnosisDue(rows, this.rowsDiagnosed);
    if (fingerprint === this.fingerprint || (open && !due)) return { findings: [], halt: null, ended, points: this.points };
    this.fingerprint = fingerprint;
    this.rowsDiagnosed = rows;
    const d = diagnose(reader);
    this.points = d.points;
    const fresh = d.findings.filter((f) => this.ledger.isNew(f));
    let halt: HaltAction | null = null;
    for (const f of fresh) {
      const { haltOn, minConfidence } = this.options;
      // an ended run is not halted: its pid may be another process's by now
      if (open && !this.halted && haltOn !== 'never' && atLeast(f, haltOn) && f.confidence >= minConfidence) {
        this.halted = f;
        halt = { finding: f, actions: this.halt(reader.runDir, f) };
      }
    }
    return { findings: fresh, halt, ended: false, points: d.points };
  }

  /** Ticks every `intervalMs` until the run ends or `signal` aborts; `onTick` sees each result. */
  async follow(intervalMs: number, onTick: (r: TickResult) => void, signal?: AbortSignal): Promise<void> {
    // oxlint-disable-next-line no-unmodified-loop-condition -- the caller's AbortController flips it
    while (!signal?.aborted) {
      let result: TickResult | null = null;
      try {
        result = this.tick();
      } catch (error) {
        // not a run yet, or files moving under a compaction: look again next tick
        if (!(error instanceof RlprobeError) || !['RLPROBE_NOT_A_RUN', 'RLPROBE_IO', 'RLPROBE_BAD_MANIFEST'].includes(error.code)) throw error;
      }
      if (result) {
        onTick(result);
        if (result.ended) return;
      }
      await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
  }

  /** False once `haltPid` is gone (without a pid to watch, the events decide). */
  private trainerAlive(): boolean {
    return this.options.haltPid === undefined || processAlive(this.options.haltPid);
  }

  /** Records `auto_halt` in the run and carries out the halt actions. */
  private halt(runDir: string, f: Finding): string[] {
    const actions: string[] = [];
    const message = `halted by ${f.code} (${f.severity}, confidence ${formatConfidence(f.confidence)}): ${f.message}`;
    const data = { signature_id: f.code, finding: f, by: 'probe watch', halt_pid: this.options.haltPid ?? null, halt_command: this.options.haltCommand ?? null };
    const line = JSON.stringify({ timestamp: Date.now() / 1000, kind: 'auto_halt', step: f.last_step, rank: 0, message, data });
    try {
      // one append of one line: interleaves whole lines with the recorder's own appends
      appendFileSync(path.join(runDir, 'events.jsonl'), `${line}\n`);
      actions.push('recorded auto_halt in events.jsonl');
    } catch (error) {
      actions.push(`could not record auto_halt: ${(error as Error).message}`);
    }
    if (this.options.haltPid !== undefined) {
      try {
        process.kill(this.options.haltPid, 'SIGTERM');
        actions.push(`sent SIGTERM to pid ${this.options.haltPid}`);
      } catch (error) {
        actions.push(`could not signal pid ${this.options.haltPid}: ${(error as Error).message}`);
      }
    }
    if (this.options.haltCommand !== undefined) {
      const r = spawnSync(this.options.haltCommand, {
        shell: true,
        stdio: 'ignore',
        timeout: 60_000,
        env: { ...process.env, RLPROBE_FINDING: JSON.stringify(f), RLPROBE_RUN_DIR: runDir },
      });
      actions.push(r.error ? `halt command failed: ${r.error.message}` : `halt command exited with ${r.status ?? r.signal}`);
    }
    return actions;
  }
}
