/**
 * One served run's cheap state: what the run list shows (manifest facts, status, rows and
 * steps, last write, findings) kept current by polling. A poll stats a few paths; only
 * what changed is read: new events from the byte where the last read stopped, new step
 * rows from the row where it stopped (`stepTableFrom`). Nothing is ever written.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

import type { Finding } from '../doctor/finding.js';
import { RunReader } from '../reader/run-reader.js';
import { runState } from '../reader/run-state.js';
import type { RunLiveness } from '../reader/run-state.js';
import { ENDING_EVENT_KINDS, runStatus, settleRunStatus } from '../reader/run-status.js';
import type { StepLayout } from '../reader/step-layout.js';
import { writerLock } from '../reader/writer-lock.js';
import type { RunEvent } from '../schema/event.js';
import { RECORDER_EVENT_KINDS } from '../schema/event-kinds.js';

/** The badge words the page shows (docs/format.md "Run states" in four words). */
export type Badge = 'live' | 'closed' | 'ended without close' | 'unknown';

const BADGES: Record<RunLiveness, Badge> = {
  live: 'live',
  'closed cleanly': 'closed',
  'ended without a close': 'ended without close',
  unknown: 'unknown',
};

/** Events the server keeps from a run's events.jsonl besides its endings: what charts mark. */
const MARKED_KINDS = new Set<string>(['checkpoint', 'auto_halt', RECORDER_EVENT_KINDS.crash, RECORDER_EVENT_KINDS.signal, RECORDER_EVENT_KINDS.resume]);
/** Marks kept per run: the most recent ones. */
const MAX_MARKS = 500;
/** Ending events kept per run (a resume clears what came before; only the last few matter). */
const MAX_ENDINGS = 64;
/** Codes of the live doctor's findings kept per run (the doctor has a few dozen). */
const MAX_LIVE_FINDINGS = 256;
/** Bytes of events.jsonl read per look: a backlog is read over several looks. */
const EVENTS_BYTES_PER_LOOK = 8 << 20;

export interface RunRow {
  key: string;
  /** The run's path relative to its served folder (the folder's name first). */
  path: string;
  id: string;
  algorithm: string;
  model: string | null;
  status: { badge: Badge; detail: string };
  rows: number;
  first_step: number | null;
  last_step: number | null;
  last_write: string | null;
  /** Findings by severity (the server's diagnosis merged with the live doctor's events). */
  findings: { critical: number; warn: number; info: number };
  diagnosis: 'none' | 'pending' | 'done' | 'failed';
  /** Why the run cannot be read now (a damaged manifest or step file), else null. */
  error: string | null;
}

/** What a poll saw change. */
export interface PollChange {
  /** The run-list row changed (status, rows, last write). */
  row: boolean;
  /** Step rows were added (or the steps were rewritten). */
  steps: boolean;
  /** The live doctor wrote findings. */
  liveFindings: boolean;
  /** Events worth a chart mark arrived. */
  marks: RunEvent[];
}

export class RunEntry {
  readonly key: string;
  readonly dir: string;
  readonly shownPath: string;
  reader: RunReader | null = null;
  error: string | null = null;
  rows = 0;
  layout: StepLayout = 'empty';
  firstStep: number | null = null;
  lastStep: number | null = null;
  lastWriteMs: number | null = null;
  badge: Badge = 'unknown';
  detail = '';
  /** The live doctor's findings (`finding` events), the latest per code. */
  readonly liveFindings = new Map<string, Finding>();
  diagnosed: Finding[] = [];
  diagnosis: RunRow['diagnosis'] = 'none';
  readonly marks: RunEvent[] = [];
  private endings: RunEvent[] = [];
  private eventsAt = 0;
  private eventsIno = 0;
  private stepsStamp = '';
  private eventsStamp = '';
  /** Rows whose steps were folded into first/last step. */
  private stepsSeen = 0;

  constructor(key: string, dir: string, shownPath: string) {
    this.key = key;
    this.dir = dir;
    this.shownPath = shownPath;
  }

  get ended(): boolean {
    return this.badge === 'closed' || this.badge === 'ended without close';
  }

  /** Looks at the run: reads what is new since the last poll. Never throws (the error is kept and shown). */
  poll(): PollChange {
    const change: PollChange = { row: false, steps: false, liveFindings: false, marks: [] };
    const before = this.factsText();
    try {
      this.reader ??= RunReader.open(this.dir);
      this.pollEvents(change);
      this.pollSteps(change);
      const status = runState(settleRunStatus(runStatus(this.endings), { layout: this.layout, lock: writerLock(this.dir) }));
      this.badge = BADGES[status.status];
      this.detail = status.detail;
      this.error = null;
    } catch (error) {
      this.error = (error as Error).message;
    }
    change.row = this.factsText() !== before;
    return change;
  }

  /** Records why looking at the run failed (shown on its row; the next look tries again). */
  failed(error: unknown): void {
    this.error = (error as Error)?.message ?? String(error);
  }

  private factsText(): string {
    try {
      return JSON.stringify(this.rowFacts());
    } catch (error) {
      return `unshowable: ${(error as Error).message}`;
    }
  }

  private pollEvents(change: PollChange): void {
    const file = path.join(this.dir, 'events.jsonl');
    const stamp = statStamp(file);
    if (stamp === this.eventsStamp) return;
    const read = this.reader!.eventsFrom(this.eventsAt, this.eventsIno, EVENTS_BYTES_PER_LOOK);
    // caught up: the next look reads again only when the file changes (else: the rest next look)
    this.eventsStamp = read.next >= read.size ? stamp : '';
    if (read.restarted) {
      this.endings = [];
      this.liveFindings.clear();
      this.marks.length = 0;
    }
    this.eventsAt = read.next;
    this.eventsIno = read.ino;
    for (const e of read.events) {
      // kept small whatever a line holds: what the status and a chart mark need
      if (ENDING_EVENT_KINDS.has(e.kind) && e.rank === 0) {
        this.endings.push(slim(e, true));
        if (this.endings.length > MAX_ENDINGS) this.endings.splice(0, this.endings.length - MAX_ENDINGS);
      }
      if (e.kind === 'finding') {
        const f = liveFinding(e.data);
        if (f && (this.liveFindings.has(f.code) || this.liveFindings.size < MAX_LIVE_FINDINGS)) {
          this.liveFindings.set(f.code, f);
          change.liveFindings = true;
        }
      }
      if (MARKED_KINDS.has(e.kind)) {
        const mark = slim(e, false);
        this.marks.push(mark);
        change.marks.push(mark);
      }
    }
    if (this.marks.length > MAX_MARKS) this.marks.splice(0, this.marks.length - MAX_MARKS);
  }

  private pollSteps(change: PollChange): void {
    // the part count too: two parts renamed in within one tick of the directory's mtime clock
    const stamp = [statStamp(path.join(this.dir, 'steps')), entryCount(path.join(this.dir, 'steps')), statStamp(path.join(this.dir, 'steps.parquet'))].join('|');
    if (stamp === this.stepsStamp) return;
    this.readSteps(change);
    // only once read: a read that failed is tried again on the next look
    this.stepsStamp = stamp;
  }

  private readSteps(change: PollChange): void {
    const storage = this.reader!.storage();
    this.layout = storage.layout;
    const rows = storage.files.reduce((n, f) => n + f.rows, 0);
    this.lastWriteMs = this.reader!.lastWriteMs();
    if (rows === this.rows && rows === this.stepsSeen) return;
    change.steps = true;
    if (rows < this.stepsSeen) {
      // rewritten under us (rows only append otherwise): count again from the start
      this.stepsSeen = 0;
      this.firstStep = null;
      this.lastStep = null;
    }
    const tail = this.reader!.stepTableFrom(this.stepsSeen, ['step']);
    const steps = tail.table.columns.find((c) => c.name === 'step')?.values ?? new Float64Array(0);
    for (let i = this.stepsSeen - tail.firstRow; i < steps.length; i++) {
      const s = steps[i];
      if (this.firstStep === null || s < this.firstStep) this.firstStep = s;
      if (this.lastStep === null || s > this.lastStep) this.lastStep = s;
    }
    this.stepsSeen = tail.totalRows;
    this.rows = tail.totalRows;
  }

  /** The findings shown: the server's diagnosis, with the live doctor's codes it has not found (yet). */
  findings(): Finding[] {
    const out = [...this.diagnosed];
    for (const f of this.liveFindings.values()) if (!out.some((d) => d.code === f.code)) out.push(f);
    return out;
  }

  private rowFacts(): Omit<RunRow, 'key' | 'path'> {
    const m = this.reader?.manifest;
    const counts = { critical: 0, warn: 0, info: 0 };
    for (const f of this.findings()) counts[f.severity]++;
    return {
      id: m?.run_id ?? path.basename(this.dir),
      algorithm: m?.algorithm ?? 'unknown',
      model: m?.model_name ?? null,
      status: { badge: this.badge, detail: this.detail },
      rows: this.rows,
      first_step: this.firstStep,
      last_step: this.lastStep,
      last_write: isoTime(this.lastWriteMs),
      findings: counts,
      diagnosis: this.diagnosis,
      error: this.error,
    };
  }

  row(): RunRow {
    return { key: this.key, path: this.shownPath, ...this.rowFacts() };
  }
}

/** Milliseconds as an ISO time; null for none, or one no Date can hold (an mtime past year 275760). */
export function isoTime(ms: number | null): string | null {
  return ms !== null && Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : null;
}

/** Entries of a directory (-1 when it cannot be listed). */
function entryCount(dir: string): number {
  try {
    return readdirSync(dir).length;
  } catch {
    return -1;
  }
}

/** Size, mtime and inode of a path ('' when it does not exist): what says it changed. */
function statStamp(p: string): string {
  try {
    const s = statSync(p, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}`;
  } catch {
    return '';
  }
}

/** Characters of an event's message, and of a live finding's texts, kept. */
const MAX_TEXT = 4000;

/** An event as the server keeps it: its place and kind, a bounded message, and (for an ending) the exit code or signal runStatus reads. */
function slim(e: RunEvent, ending: boolean): RunEvent {
  const data: Record<string, unknown> = {};
  if (ending) {
    for (const k of ['code', 'signal'] as const) {
      const v = (e.data as Record<string, unknown> | null)?.[k];
      if (typeof v === 'number' || (typeof v === 'string' && v.length <= 64)) data[k] = v;
    }
  }
  return { timestamp: e.timestamp, kind: e.kind, step: e.step, rank: e.rank, message: cut(e.message), data } as RunEvent;
}

function cut(s: unknown): string {
  const t = typeof s === 'string' ? s : '';
  return t.length > MAX_TEXT ? `${t.slice(0, MAX_TEXT)}…` : t;
}

const SEVERITIES = new Set(['info', 'warn', 'critical']);

/**
 * A live doctor's `finding` event's data as a Finding, checked field by field (event data is
 * not checked when read): null when it is not one. Texts are bounded and lists capped, so a
 * foreign writer's event can neither break the page nor grow the server.
 */
export function liveFinding(data: unknown): Finding | null {
  const d = data as Record<string, unknown> | null;
  if (d === null || typeof d !== 'object') return null;
  const num = (v: unknown) => typeof v === 'number';
  if (typeof d.code !== 'string' || d.code === '' || d.code.length > 100 || !SEVERITIES.has(d.severity as string)) return null;
  if (!num(d.onset_step) || !num(d.last_step) || !num(d.confidence)) return null;
  const evidence: Record<string, number> = {};
  if (d.evidence && typeof d.evidence === 'object') {
    for (const [k, v] of Object.entries(d.evidence).slice(0, 50)) if (typeof v === 'number') evidence[cut(k)] = v;
  }
  const samples = Array.isArray(d.samples)
    ? d.samples
        .slice(0, 50)
        .filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object' && num((x as Record<string, unknown>).step) && typeof (x as Record<string, unknown>).sample_id === 'string')
        .map((x) => ({ step: x.step as number, sample_id: cut(x.sample_id), why: cut(x.why) }))
    : [];
  const levels = d.levels as Finding['levels'] | null | undefined;
  return {
    code: d.code,
    severity: d.severity as Finding['severity'],
    onset_step: d.onset_step as number,
    last_step: d.last_step as number,
    confidence: d.confidence as number,
    message: cut(d.message),
    remedy: cut(d.remedy),
    evidence,
    columns: Array.isArray(d.columns) ? d.columns.filter((c): c is string => typeof c === 'string').slice(0, 50).map(cut) : [],
    root_cause: typeof d.root_cause === 'string' ? cut(d.root_cause) : null,
    samples,
    levels: levels && typeof levels === 'object' && typeof levels.column === 'string' && num(levels.start) && num(levels.end) ? levels : null,
  };
}
