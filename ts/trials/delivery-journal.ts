/**
 * The delivery journal, `.probe-capture.journal` beside a staged record: each file's
 * delivery outcome appended as one JSON line, so confirming a file costs one short append
 * (batched, then fsynced) instead of rewriting a record that lists every file — which made
 * a delivery quadratic in the number of files. Reading a staged record folds its journal in;
 * a delivery folds it into the record once at the end and removes it. A delivery killed part
 * way leaves the journal: the next read or delivery applies it, so nothing confirmed is lost
 * and nothing is copied twice.
 *
 * The first line names the staging the journal belongs to (capture key and `staged_at`): a
 * journal of another staging is refused, never applied. A last line cut short by a kill is
 * ignored (its file is simply confirmed again).
 */
import { readFileSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';

import { RlprobeError } from '../errors.js';

export const JOURNAL_FILE = '.probe-capture.journal';

/** A batch is written and fsynced when it holds this many lines or is this old. */
const BATCH_LINES = 512;
const BATCH_MS = 50;

export interface JournalHeader {
  kind: 'rlprobe.delivery_journal';
  capture_key: string;
  staged_at: string;
}

/** One file's outcome in one attempt. */
export interface FileOutcome {
  file: string;
  status: 'delivered' | 'failed';
  attempts: number;
  last_error: string | null;
  delivered_at: string | null;
}

/** A delivery attempt starting. */
export interface AttemptLine {
  attempt: number;
  at: string;
  run_dir: string;
}

export type JournalLine = FileOutcome | AttemptLine;

export function journalPath(dir: string): string {
  return path.join(dir, JOURNAL_FILE);
}

export function removeJournal(dir: string): void {
  rmSync(journalPath(dir), { force: true });
}

/** The lines of `dir`'s journal for the staging `header` names; [] when there is none. */
export function readJournal(dir: string, header: Omit<JournalHeader, 'kind'>): JournalLine[] {
  const file = journalPath(dir);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: ${(e as Error).message}`);
  }
  // the piece after the last newline is empty, or a line cut short by a kill: not applied
  const complete = text.split('\n').slice(0, -1);
  if (complete.length === 0) return [];
  let first: Partial<JournalHeader> | null = null;
  try {
    first = JSON.parse(complete[0]) as Partial<JournalHeader>;
  } catch {
    /* reported below */
  }
  if (first?.kind !== 'rlprobe.delivery_journal' || first.capture_key !== header.capture_key || first.staged_at !== header.staged_at) {
    const of = first?.kind === 'rlprobe.delivery_journal' ? `${first.capture_key} staged at ${first.staged_at}` : 'an unknown staging';
    throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: written for the staging of ${of}, not this record's (${header.capture_key} staged at ${header.staged_at}); remove it to deliver afresh`);
  }
  return complete.slice(1).map((line, i) => {
    try {
      return JSON.parse(line) as JournalLine;
    } catch (e) {
      throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file} line ${i + 2}: ${(e as Error).message}`);
    }
  });
}

/**
 * The journal of one delivery attempt, appended to in batches. A delivery starts one only
 * after folding any earlier journal into the record (so a line cut short by a kill never
 * ends up in the middle of a journal).
 */
export class DeliveryJournal {
  private pending: string[] = [];
  private since = Date.now();
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly fh: FileHandle,
    readonly file: string,
  ) {}

  /** Starts `dir`'s journal (replacing any: fold it into the record first). */
  static async create(dir: string, header: Omit<JournalHeader, 'kind'>): Promise<DeliveryJournal> {
    const file = journalPath(dir);
    const fh = await open(file, 'w');
    const journal = new DeliveryJournal(fh, file);
    journal.pending.push(JSON.stringify({ kind: 'rlprobe.delivery_journal', ...header }));
    return journal;
  }

  /** Queues a line; a full or old batch is written (in order, one write at a time). */
  add(line: JournalLine): void {
    this.pending.push(JSON.stringify(line));
    // a failed write is not lost: `writing` keeps the rejection for close() to throw
    if (this.pending.length >= BATCH_LINES || Date.now() - this.since >= BATCH_MS) this.flush().catch(() => {});
  }

  /** Writes and fsyncs what is queued; resolves once everything queued so far is durable. */
  flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    this.since = Date.now();
    if (batch.length > 0) {
      this.writing = this.writing.then(async () => {
        await this.fh.appendFile(`${batch.join('\n')}\n`);
        await this.fh.sync();
      });
    }
    return this.writing;
  }

  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      await this.fh.close();
    }
  }
}
