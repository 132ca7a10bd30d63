/**
 * The server's own diagnoses: one at a time (a diagnosis of a 1,000,000-step run reads the
 * whole run: seconds and hundreds of MiB, so two at once would double the peak), each run
 * again as it grows by a fiftieth (the rule `probe watch` follows), at least `minGapMs`
 * apart, and once more after it ends. Off the JS thread (`diagnoseAsync`), so the server
 * keeps answering while the doctor reads.
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
}

export class DiagnosisQueue {
  private readonly followed = new Map<string, Followed>();
  private readonly waiting: RunEntry[] = [];
  private running: Promise<void> | null = null;
  private stopped = false;
  /** Diagnoses run, and failed (the error is shown on the run). */
  counts = { run: 0, failed: 0 };

  constructor(
    private readonly onFindings: (entry: RunEntry, fresh: Finding[]) => void,
    private readonly minGapMs = 2000,
  ) {}

  /** Queues `entry` when it is due a diagnosis (a no-op otherwise, or when queued already). */
  consider(entry: RunEntry, now = Date.now()): void {
    if (this.stopped || entry.reader === null || entry.error !== null || entry.rows === 0) return;
    const f = this.state(entry.key);
    const due = entry.ended ? !f.endedDiagnosed || diagnosisDue(entry.rows, f.rowsDiagnosed) : diagnosisDue(entry.rows, f.rowsDiagnosed) && now - f.lastAt >= this.minGapMs;
    if (!due || this.waiting.includes(entry)) return;
    if (entry.diagnosis === 'none') entry.diagnosis = 'pending';
    this.waiting.push(entry);
    this.pump();
  }

  forget(key: string): void {
    this.followed.delete(key);
    const i = this.waiting.findIndex((e) => e.key === key);
    if (i >= 0) this.waiting.splice(i, 1);
  }

  /** Stops taking work; resolves when the diagnosis in flight (if any) is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.waiting.length = 0;
    await this.running;
  }

  /** Resolves when nothing is queued or running (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private state(key: string): Followed {
    let f = this.followed.get(key);
    if (!f) {
      f = { rowsDiagnosed: -1, endedDiagnosed: false, lastAt: 0, ledger: new FindingLedger() };
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
        this.pump();
      });
  }

  private async diagnoseOne(entry: RunEntry): Promise<void> {
    const f = this.state(entry.key);
    const rows = entry.rows;
    const ended = entry.ended;
    f.lastAt = Date.now();
    try {
      const d = await diagnoseAsync(entry.reader!);
      this.counts.run++;
      f.rowsDiagnosed = rows;
      if (ended) f.endedDiagnosed = true;
      entry.diagnosed = d.findings;
      entry.diagnosis = 'done';
      const fresh = d.findings.filter((x) => f.ledger.isNew(x));
      this.tell(entry, fresh);
    } catch (error) {
      this.counts.failed++;
      // a run in the middle of a compaction, or damaged: tried again as it grows
      f.rowsDiagnosed = rows;
      if (ended) f.endedDiagnosed = true;
      entry.diagnosis = 'failed';
      entry.error ??= `diagnosis failed: ${(error as Error).message}`;
      this.tell(entry, []);
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
