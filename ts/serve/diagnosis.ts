/**
 * The server's own diagnoses: one at a time (a diagnosis of a 1,000,000-step run reads the
 * whole run: seconds and hundreds of MiB, so two at once would double the peak), each run
 * again as it grows by a fiftieth (the rule `probe watch` follows), at least `minGapMs`
 * apart, and once more after it ends. Off the JS thread (`diagnoseAsync`), so the server
 * keeps answering while the doctor reads. A caller that needs a run's findings now (the
 * diff view) asks `findings`: the last diagnosis when it saw every row, else one queued
 * ahead of the rest — through the same queue, never beside it.
 */
import { diagnoseAsync } from '../doctor/diagnose.js';
import { FindingLedger, diagnosisDue } from '../doctor/follow.js';
import type { Finding } from '../doctor/finding.js';
import type { RunEntry } from './run-entry.js';

interface Followed {
  rowsDiagnosed: number;
  endedDiagnosed: boolean;
  lastAt: number;
  ledger: FindingLedger;
  /** What the last diagnosis found (null: none yet, or it failed). */
  found: Finding[] | null;
}

/** A run as one diagnosis read it, or as one caller saw it. */
interface Seen {
  rows: number;
  ended: boolean;
}

/** Whether a diagnosis of `read` answers a caller who saw `seen`: every row, and the end if it saw one. */
function covers(read: Seen, seen: Seen): boolean {
  return seen.rows <= read.rows && (read.ended || !seen.ended);
}

/** A caller waiting for a diagnosis of the run as it was when it asked (the `seq`-th to ask). */
interface Waiter {
  seq: number;
  rows: number;
  ended: boolean;
  resolve: (findings: Finding[]) => void;
  reject: (error: Error) => void;
}

export class DiagnosisQueue {
  private readonly followed = new Map<string, Followed>();
  private readonly waiting: RunEntry[] = [];
  private readonly waiters = new Map<string, Waiter[]>();
  private running: Promise<void> | null = null;
  /** The run being diagnosed now, as it was when its diagnosis began, and the last caller to ask by then. */
  private inFlight: { key: string; rows: number; ended: boolean; seq: number } | null = null;
  /** Callers that asked so far (each waiter's number). */
  private asked = 0;
  private stopped = false;
  /** Diagnoses run, failed (the error is shown on the run), and answered from the last one. */
  counts = { run: 0, failed: 0, reused: 0 };

  /**
   * `publish`: whether diagnoses are the server's to show (`--no-diagnose` turns it off; a
   * diagnosis asked for by `findings` is then handed to the caller alone).
   */
  constructor(
    private readonly onFindings: (entry: RunEntry, fresh: Finding[]) => void,
    private readonly minGapMs = 2000,
    private readonly publish = true,
  ) {}

  /** `entry`'s findings as of its rows now: the last diagnosis's when it saw them all, else
   *  a diagnosis queued first (behind the one in flight, if any). */
  findings(entry: RunEntry): Promise<Finding[]> {
    if (this.stopped) return Promise.reject(new Error('the server is stopping'));
    if (entry.reader === null) return Promise.reject(new Error(`run ${entry.shownPath} cannot be read${entry.error ? `: ${entry.error}` : ''}`));
    const f = this.state(entry.key);
    if (f.found !== null && f.rowsDiagnosed === entry.rows && (f.endedDiagnosed || !entry.ended)) {
      this.counts.reused++;
      return Promise.resolve(f.found);
    }
    return new Promise<Finding[]>((resolve, reject) => {
      const list = this.waiters.get(entry.key) ?? [];
      list.push({ seq: ++this.asked, rows: entry.rows, ended: entry.ended, resolve, reject });
      this.waiters.set(entry.key, list);
      // the diagnosis in flight sees every row the caller saw: it answers
      if (this.covered(entry)) return;
      const i = this.waiting.indexOf(entry);
      if (i >= 0) this.waiting.splice(i, 1);
      // ahead of the runs that are only due, behind the ones asked for before it
      const asked = this.waiting.findIndex((e) => !this.waiters.has(e.key));
      this.waiting.splice(asked < 0 ? this.waiting.length : asked, 0, entry);
      this.pump();
    });
  }

  /** Queues `entry` when it is due a diagnosis (a no-op otherwise, or when queued already). */
  consider(entry: RunEntry, now = Date.now()): void {
    if (this.stopped || entry.reader === null || entry.error !== null || entry.rows === 0) return;
    const f = this.state(entry.key);
    const due = entry.ended ? !f.endedDiagnosed || diagnosisDue(entry.rows, f.rowsDiagnosed) : diagnosisDue(entry.rows, f.rowsDiagnosed) && now - f.lastAt >= this.minGapMs;
    if (!due || this.waiting.includes(entry) || this.covered(entry)) return;
    if (entry.diagnosis === 'none') entry.diagnosis = 'pending';
    this.waiting.push(entry);
    this.pump();
  }

  forget(key: string): void {
    this.followed.delete(key);
    const i = this.waiting.findIndex((e) => e.key === key);
    if (i >= 0) this.waiting.splice(i, 1);
    this.settle(key, () => true, new Error('the run was removed from the folder'));
  }

  /** Stops taking work; resolves when the diagnosis in flight (if any) is done, its callers answered and the rest let go. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.waiting.length = 0;
    const stopping = () => new Error('the server is stopping');
    const flying = this.inFlight?.key;
    for (const key of this.waiters.keys()) if (key !== flying) this.settle(key, () => true, stopping());
    await this.running;
    for (const key of this.waiters.keys()) this.settle(key, () => true, stopping());
  }

  /** Resolves when nothing is queued or running (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Whether the diagnosis in flight is of `entry` and began with every row it has now. */
  private covered(entry: RunEntry): boolean {
    const f = this.inFlight;
    return f !== null && f.key === entry.key && covers(f, entry);
  }

  private state(key: string): Followed {
    let f = this.followed.get(key);
    if (!f) {
      f = { rowsDiagnosed: -1, endedDiagnosed: false, lastAt: 0, ledger: new FindingLedger(), found: null };
      this.followed.set(key, f);
    }
    return f;
  }

  private pump(): void {
    if (this.running || this.stopped) return;
    const entry = this.waiting.shift();
    if (!entry) return;
    this.running = this.diagnoseOne(entry)
      .catch(() => {
        this.counts.failed++;
      })
      .finally(() => {
        this.running = null;
        this.inFlight = null;
        this.pump();
      });
  }

  private async diagnoseOne(entry: RunEntry): Promise<void> {
    const f = this.state(entry.key);
    const rows = entry.rows;
    const ended = entry.ended;
    f.lastAt = Date.now();
    this.inFlight = { key: entry.key, rows, ended, seq: this.asked };
    try {
      const d = await diagnoseAsync(entry.reader!);
      this.counts.run++;
      f.rowsDiagnosed = rows;
      if (ended) f.endedDiagnosed = true;
      f.found = d.findings;
      this.answer(entry, d.findings);
      if (!this.publish) return;
      entry.diagnosed = d.findings;
      entry.diagnosis = 'done';
      const fresh = d.findings.filter((x) => f.ledger.isNew(x));
      this.tell(entry, fresh);
    } catch (error) {
      this.counts.failed++;
      // a run in the middle of a compaction, or damaged: tried again as it grows
      f.rowsDiagnosed = rows;
      if (ended) f.endedDiagnosed = true;
      f.found = null;
      this.answer(entry, new Error(`diagnosis of ${entry.shownPath} failed: ${(error as Error).message}`));
      if (!this.publish) return;
      entry.diagnosis = 'failed';
      entry.error ??= `diagnosis failed: ${(error as Error).message}`;
      this.tell(entry, []);
    }
  }

  /**
   * Settles the callers of the diagnosis of `entry` just done: all of them with an error;
   * with findings, those who asked before it began (it read the run as it was then, rows
   * that went away included) and those who asked since whom it covers. Any left, who saw
   * more of the run than it read, get the next diagnosis.
   */
  private answer(entry: RunEntry, result: Finding[] | Error): void {
    const f = this.inFlight;
    if (f === null) return;
    const served = (w: Waiter) => result instanceof Error || w.seq <= f.seq || covers(f, w);
    this.settle(entry.key, served, result);
    if (this.waiters.has(entry.key) && !this.stopped && !this.waiting.includes(entry)) this.waiting.unshift(entry);
  }

  /** Settles the callers waiting on `key` whom `which` picks, with `result`. */
  private settle(key: string, which: (w: Waiter) => boolean, result: Finding[] | Error): void {
    const list = this.waiters.get(key);
    if (!list) return;
    const left = list.filter((w) => !which(w));
    if (left.length) this.waiters.set(key, left);
    else this.waiters.delete(key);
    for (const w of list) {
      if (left.includes(w)) continue;
      if (result instanceof Error) w.reject(result);
      else w.resolve(result);
    }
  }

  /** Hands the news on; what the receiver throws is its own (the queue goes on). */
  private tell(entry: RunEntry, fresh: Finding[]): void {
    if (this.stopped) return;
    try {
      this.onFindings(entry, fresh);
    } catch {
      // the receiver failed for this run (e.g. its row cannot be shown): the next diagnosis tells again
    }
  }
}
