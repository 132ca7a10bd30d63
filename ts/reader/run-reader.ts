import { statSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError, native } from '../errors.js';
import { readSteps, readStepsFrom, sampleFiles, spanFiles, stepColumns, stepFiles } from '../native.js';
import type { NativeSkippedFile, NativeStepTable } from '../native.js';
import type { RunEvent } from '../schema/event.js';
import type { RunManifest } from '../schema/manifest.js';
import { parseRunManifest } from '../schema/manifest-check.js';
import type { StoredSampleRecord } from '../schema/sample-record.js';
import type { StoredStepRecord } from '../schema/step-record.js';
import { readEventsFile, readEventsFrom, streamEventsFile } from './events-file.js';
import type { EventsDiagnostics, EventsFrom, EventsRead } from './events-file.js';
import { readRegularFile } from '../files/regular-file.js';
import { planRead } from './migrations.js';
import type { Migration, ReadAdapter } from './migrations.js';
import { runStatus, settleRunStatus } from './run-status.js';
import type { RunStatus } from './run-status.js';
import { RunView } from './run-view.js';
import type { StepLayout } from './step-layout.js';
import { writerLock } from './writer-lock.js';
import { rankSubdirs, recordingDirs } from './rank-dirs.js';
import type { RankDir } from './rank-dirs.js';
import { parseSampleQuery, readSampleTableOf, sampledStepsOf, streamSampleBatches } from './sample-stream.js';
import type { SampleTable } from './sample-table.js';
import type { SampleQuery } from './sample-stream.js';
import { rowsOf } from './step-table.js';
import { readSpansOf, spanCountsOf, spanForest, subtreeIds } from './span-reader.js';
import type { SpanQuery } from './span-reader.js';
import { findTrial, readTrialsOf } from './trial-reader.js';
import type { BrokenCapture, TrialCapture, TrialQuery } from './trial-reader.js';
import type { SpanKindCount, SpanRecord, SpanTreeNode } from '../schema/span-record.js';

export type { StepLayout } from './step-layout.js';

export interface OpenOptions {
  /** The migration chain (default: the built-in one, reader/migrations.ts). */
  migrations?: readonly Migration[];
}

/** Which events to read (every one by default). */
export interface EventQuery {
  /** Only events of these kinds. */
  kinds?: readonly string[];
  /** Only the last this many (after the other filters). */
  last?: number;
}

function eventFilter(query: EventQuery): ((e: RunEvent) => boolean) | undefined {
  const kinds = query.kinds === undefined ? null : new Set(query.kinds);
  return kinds === null ? undefined : (e) => kinds.has(e.kind);
}

function nextKept(stream: Iterator<RunEvent>, keep: ((e: RunEvent) => boolean) | undefined): RunEvent | null {
  for (;;) {
    const r = stream.next();
    if (r.done) return null;
    if (!keep || keep(r.value)) return r.value;
  }
}

export type { RankDir } from './rank-dirs.js';

export interface SampleFileInfo {
  path: string;
  rank: number;
  rows: number;
  bytes: number;
  /** A compacted shard (else a live part file). */
  shard: boolean;
}

export interface StepFileInfo {
  path: string;
  rows: number;
  bytes: number;
  compacted: boolean;
}

/** The tables of a recording kept in Parquet files. */
export type FileSurface = 'steps' | 'samples' | 'spans';

/**
 * A file readers skip (foreign: not written by the recorder there, or a copy) or cannot
 * read (damaged), and why.
 */
export interface SkippedRunFile {
  surface: FileSurface;
  rank: number;
  path: string;
  reason: string;
}

/**
 * Reads a recording — cleanly closed, still live, or crashed. Steps are read each exactly
 * once whatever the layout (compacted, part files, or the mix a crash mid-compaction
 * leaves).
 */
export class RunReader {
  readonly runDir: string;
  readonly manifest: RunManifest;
  /** How this recording's version is read (migrated when older than this rlprobe's). */
  readonly adapter: ReadAdapter;

  private constructor(runDir: string, manifest: RunManifest, adapter: ReadAdapter) {
    this.runDir = runDir;
    this.manifest = manifest;
    this.adapter = adapter;
  }

  /**
   * Opens a run directory. Throws RlprobeError: RLPROBE_NOT_A_RUN (no manifest.json),
   * RLPROBE_BAD_MANIFEST, or RLPROBE_SCHEMA_TOO_NEW (recorded by a newer rlprobe).
   */
  static open(runDir: string, options: OpenOptions = {}): RunReader {
    const dir = path.resolve(runDir);
    const file = path.join(dir, 'manifest.json');
    // a FIFO, a directory or a symlink loop in its place: RLPROBE_BAD_MANIFEST naming it
    const text = readRegularFile(file, 'RLPROBE_BAD_MANIFEST', 'a run directory needs its manifest.json as a regular file: restore it from a copy');
    if (text === null) {
      throw new RlprobeError('RLPROBE_NOT_A_RUN', `not a run directory (no manifest.json): ${dir}`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file} is not valid JSON: ${(error as Error).message}`);
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: expected a JSON object`);
    }
    const version = (raw as { schema_version?: unknown }).schema_version;
    if (typeof version !== 'number' || !Number.isInteger(version) || version < 0) {
      throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: schema_version: expected a non-negative integer (got ${JSON.stringify(version)})`);
    }
    const adapter = planRead(version, dir, options.migrations);
    const parsed = parseRunManifest(adapter.manifest(raw as Record<string, unknown>));
    if (!parsed.ok) throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: ${parsed.field || 'manifest'}: ${parsed.message}`);
    return new RunReader(dir, parsed.manifest, adapter);
  }

  /**
   * How the run ended: its recorder's ending events, settled when there are none by what the
   * directory shows (compacted steps and no writer lock: closed by a writer that records no
   * end, as Python rlprobe; a writer lock whose holder is gone: killed).
   */
  status(): RunStatus {
    return settleRunStatus(runStatus(this.events()), { layout: this.storage().layout, lock: writerLock(this.runDir) });
  }

  /** Where the steps are: files in read order (footer row counts), leftovers, layout. */
  storage(): { files: StepFileInfo[]; absorbedLeftovers: number; layout: StepLayout } {
    const info = native(() => stepFiles(this.runDir));
    const compacted = info.files.some((f) => f.compacted);
    const parts = info.files.some((f) => !f.compacted) || info.absorbedLeftovers > 0;
    const layout: StepLayout = compacted && parts ? 'mixed' : compacted ? 'compacted' : parts ? 'parts' : 'empty';
    return { files: info.files, absorbedLeftovers: info.absorbedLeftovers, layout };
  }

  /**
   * Files skipped by every read: in `steps/` (rank 0, whose steps are read), `samples/` and
   * `spans/` (every rank), files the recorder did not write there, a table of another
   * stream, a copy of another file (read once), a compaction of another run's parts.
   */
  foreignFiles(): SkippedRunFile[] {
    return this.skippedFiles().foreign;
  }

  /**
   * Files that cannot be read (not a regular file, a damaged footer): reading their table
   * fails naming them. A directory whose listing itself fails (a damaged compacted file)
   * is listed with that error, under the directory's path.
   */
  damagedFiles(): SkippedRunFile[] {
    return this.skippedFiles().damaged;
  }

  /**
   * `foreignFiles()`, `damagedFiles()` and `sampleFiles()` from one listing of the run's
   * directories: with thousands of sample shards each listing opens every footer, so a
   * caller that wants all three (`probe info`) lists once. `sampleFiles` is null when a
   * samples directory cannot be listed (it is then among `damaged`).
   */
  fileListing(): { foreign: SkippedRunFile[]; damaged: SkippedRunFile[]; sampleFiles: SampleFileInfo[] | null } {
    return this.listFiles(true);
  }

  private skippedFiles(): { foreign: SkippedRunFile[]; damaged: SkippedRunFile[] } {
    return this.listFiles(false);
  }

  private listFiles(withSamples: boolean): { foreign: SkippedRunFile[]; damaged: SkippedRunFile[]; sampleFiles: SampleFileInfo[] | null } {
    const foreign: SkippedRunFile[] = [];
    const damaged: SkippedRunFile[] = [];
    let samples: SampleFileInfo[] | null = withSamples ? [] : null;
    const listing = <T extends { foreign: NativeSkippedFile[]; damaged: NativeSkippedFile[] }>(surface: FileSurface, rank: number, dir: string, list: () => T): T | null => {
      try {
        const l = native(list);
        for (const f of l.foreign) foreign.push({ surface, rank, path: f.path, reason: f.reason });
        for (const f of l.damaged) damaged.push({ surface, rank, path: f.path, reason: f.reason });
        return l;
      } catch (error) {
        if (!(error instanceof RlprobeError)) throw error;
        damaged.push({ surface, rank, path: surface === 'steps' ? dir : path.join(dir, surface), reason: error.message });
        return null;
      }
    };
    listing('steps', 0, this.runDir, () => stepFiles(this.runDir));
    for (const { rank, dir } of this.sampleDirs(null)) {
      const listed = listing('samples', rank, dir, () => sampleFiles(dir));
      if (listed === null) samples = null;
      else if (samples !== null) for (const f of listed.files) samples.push({ path: f.path, rank, rows: f.rows, bytes: f.bytes, shard: f.shard });
      listing('spans', rank, dir, () => spanFiles(dir));
    }
    return { foreign, damaged, sampleFiles: samples };
  }

  /** The files holding steps, in read order, with footer row counts. */
  stepFiles(): StepFileInfo[] {
    return this.storage().files;
  }

  /** Parts a crash mid-compaction left next to the steps.parquet that already holds them. */
  absorbedLeftovers(): number {
    return this.storage().absorbedLeftovers;
  }

  layout(): StepLayout {
    return this.storage().layout;
  }

  /** Step columns (name and kind) from the files' footers, without reading data. */
  stepColumns(): Array<{ name: string; kind: string }> {
    return native(() => stepColumns(this.runDir)).map((c) => ({ ...c, name: this.adapter.currentStepColumn(c.name) }));
  }

  /** The step table as columns (optionally only `columns`), under current column names. */
  stepTable(columns?: string[]): NativeStepTable {
    const a = this.adapter;
    const table = native(() => readSteps(this.runDir, columns && a.migrated ? columns.map((c) => a.physicalStepColumn(c)) : columns));
    if (a.migrated) for (const col of table.columns) col.name = a.currentStepColumn(col.name);
    return table;
  }

  /**
   * The steps a follower has not read yet: the rows from the file row group holding row
   * `fromRow` to the end (rows only append: parts are appended, a compaction keeps their
   * order). `firstRow` (≤ fromRow) is the row the table starts at; `totalRows` counts the
   * whole table as this read listed it.
   */
  stepTableFrom(fromRow: number, columns?: string[]): { firstRow: number; totalRows: number; table: NativeStepTable } {
    if (!Number.isInteger(fromRow) || fromRow < 0 || fromRow > 0xffffffff) {
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `stepTableFrom: fromRow: expected a row number from 0 (got ${fromRow})`);
    }
    const a = this.adapter;
    const tail = native(() => readStepsFrom(this.runDir, fromRow, columns && a.migrated ? columns.map((c) => a.physicalStepColumn(c)) : columns));
    if (a.migrated) for (const col of tail.table.columns) col.name = a.currentStepColumn(col.name);
    return tail;
  }

  /** Every step as a record, dicts (`reward_components`, `extra`) and lists rebuilt. */
  steps(): StoredStepRecord[] {
    return rowsOf(this.stepTable());
  }

  /** Columnar view: `series(name)` as Float64Array aligned to the steps. */
  view(columns?: string[]): RunView {
    return new RunView(this.stepTable(columns?.includes('step') ? columns : columns && ['step', ...columns]));
  }

  /**
   * Samples of every rank, streamed one bounded batch at a time (never loaded whole),
   * filtered in Rust: `{step, stepRange: [from, to], steps: [s1, s2…], reason, group, rank, rewardMin,
   * rewardMax, truncated, text, sampleId, aroundFinding, columns}` (`aroundFinding: finding`
   * keeps the steps from that finding's onset to its last step; `findingByCode` finds it).
   * Order: rank 0 then each rank directory; within one, shards then live parts, each in
   * the order written. Throws RlprobeError RLPROBE_INVALID_QUERY for a bad filter.
   */
  samples(query: SampleQuery = {}): Generator<StoredSampleRecord, void, undefined> {
    const q = parseSampleQuery(query);
    // the query is checked now; the files are listed when the first sample is asked for
    return flattenBatches(() => streamSampleBatches(this.sampleDirs(q.ranks), q, this.adapter));
  }

  /**
   * The samples `samples(query)` yields, as one table of columns: numbers in a Float64Array
   * per column, texts in one UTF-8 buffer per column, decoded when asked for. The bulk read
   * (a million samples' ids and rewards) without a record per row; files are decoded on
   * up to 4 threads. It holds every matching row: leave the texts out of `columns`, or
   * stream them with `samples()`, when they are many. Columns: those asked for (or all)
   * and `rank`, filled in from the rank directory where a row has none.
   */
  sampleTable(query: SampleQuery = {}): SampleTable {
    const q = parseSampleQuery(query);
    return readSampleTableOf(this.sampleDirs(q.ranks), q, this.adapter);
  }

  /**
   * The distinct values of sample text column `column` (e.g. `capture_reason`), every rank,
   * sorted; read as columns, no record per sample.
   */
  sampleTextValues(column: string, query: Omit<SampleQuery, 'columns'> = {}): string[] {
    const t = this.sampleTable({ ...query, columns: [column] });
    return t.has(column) ? t.distinctTexts(column).sort() : [];
  }

  /** `samples()` one batch (array) at a time. */
  sampleBatches(query: SampleQuery = {}): Generator<StoredSampleRecord[], void, undefined> {
    const q = parseSampleQuery(query);
    return streamSampleBatches(this.sampleDirs(q.ranks), q, this.adapter);
  }

  /** The steps that hold samples (every rank), ascending: only the step column is read. */
  sampledSteps(): number[] {
    return sampledStepsOf(this.sampleDirs(null), this.adapter);
  }

  /** The files holding samples, every rank, with footer row counts. */
  sampleFiles(): SampleFileInfo[] {
    const out: SampleFileInfo[] = [];
    for (const { rank, dir } of this.sampleDirs(null)) {
      for (const f of native(() => sampleFiles(dir)).files) out.push({ path: f.path, rank, rows: f.rows, bytes: f.bytes, shard: f.shard });
    }
    return out;
  }

  // ---- spans (docs/format.md#spans)

  /**
   * Spans matching `query` (every rank), each at its last write, earliest start first.
   * Throws RlprobeError RLPROBE_INVALID_QUERY for a bad filter.
   */
  spans(query: SpanQuery = {}): SpanRecord[] {
    return readSpansOf(this.sampleDirs(null), query).spans;
  }

  /** `spans(query)` with how many spans the run holds and how many matched before `limit`. */
  spanRead(query: SpanQuery = {}): { spans: SpanRecord[]; total: number; matched: number } {
    return readSpansOf(this.sampleDirs(null), query);
  }

  /** Spans per kind (every rank), with how many are open and how many ended in error. */
  spanCounts(): SpanKindCount[] {
    return spanCountsOf(this.sampleDirs(null));
  }

  /** One span by id, or null. */
  span(id: string): SpanRecord | null {
    return this.spans({ id }).at(-1) ?? null;
  }

  /**
   * The whole tree `spanOrId` belongs to (from its root), or null when there is no such
   * span. Spans whose parent was never written hang from the root.
   */
  spanTree(spanOrId: string | SpanRecord): SpanTreeNode | null {
    const span = typeof spanOrId === 'string' ? this.span(spanOrId) : spanOrId;
    if (span === null) return null;
    const tree = this.spans({ root: span.root_id });
    if (!tree.some((s) => s.span_id === span.span_id)) tree.push(span);
    const forest = spanForest(tree);
    const root = forest.find((n) => n.span.span_id === span.root_id) ?? forest[0];
    if (root === undefined) return null;
    // orphans (a parent lost to a crash) are kept under the root rather than dropped
    for (const n of forest) if (n !== root) root.children.push(n);
    return root;
  }

  /** The span a sample was logged under, or null (no span, or not recorded). */
  spanOfSample(sample: Pick<StoredSampleRecord, 'span_id'>): SpanRecord | null {
    return sample.span_id ? this.span(sample.span_id) : null;
  }

  /**
   * The samples logged under `spanOrId` or any span below it (every rank). Two passes: the
   * `span_id` and `step` columns alone find the steps holding them, then only those steps
   * are read with `query`'s columns and filters.
   */
  samplesOfSpan(spanOrId: string | SpanRecord, query: Omit<SampleQuery, 'step' | 'stepRange' | 'steps' | 'aroundFinding'> = {}): StoredSampleRecord[] {
    const span = typeof spanOrId === 'string' ? this.span(spanOrId) : spanOrId;
    if (span === null) return [];
    const ids = subtreeIds(this.spans({ root: span.root_id }), span.span_id);
    const steps = new Set<number>();
    // the bulk pass as columns: no record per sample of the run
    const t = this.sampleTable({ rank: query.rank, columns: ['span_id', 'step'] });
    if (t.has('span_id') && t.has('step')) {
      const step = t.numbers('step');
      for (let r = 0; r < t.rows; r++) {
        const id = t.text('span_id', r);
        if (id !== undefined && ids.has(id) && t.isValid('step', r)) steps.add(step[r]);
      }
    }
    if (steps.size === 0) return [];
    const q: SampleQuery = { ...query, steps: [...steps].sort((a, b) => a - b) };
    if (q.columns && !q.columns.includes('span_id')) q.columns = [...q.columns, 'span_id'];
    const out: StoredSampleRecord[] = [];
    for (const s of this.samples(q)) if (s.span_id !== undefined && ids.has(s.span_id)) out.push(s);
    return out;
  }

  // ---- captured trials (docs/format.md#trials)

  /**
   * Captured trials (every rank), by step then capture key: each one's manifest with its
   * trial facts, rewards, ledger and trajectories. Throws RLPROBE_INVALID_QUERY for a bad
   * filter.
   */
  trials(query: TrialQuery = {}): TrialCapture[] {
    return readTrialsOf(this.sampleDirs(null), query).trials;
  }

  /** Capture directories a capture or delivery is still writing (or left unfinished). */
  unfinishedTrials(): string[] {
    return readTrialsOf(this.sampleDirs(null)).unfinished;
  }

  /** Captures whose manifest cannot be read, with why: `trials()` skips them. */
  brokenTrials(): BrokenCapture[] {
    return readTrialsOf(this.sampleDirs(null)).broken;
  }

  /** One capture by key, trial id, trial name or unique key prefix (see `findTrial`). */
  trial(ref: string): TrialCapture {
    return findTrial(this.trials(), ref);
  }

  /** The span tree of a captured trial: its rollout, turns and tool calls. */
  trialSpanTree(trial: TrialCapture): SpanTreeNode | null {
    return this.spanTree(trial.spans.rollout_span_id);
  }

  /** The run (rank 0) and its rank directories, optionally only `ranks`. */
  private sampleDirs(ranks: ReadonlySet<number> | null): RankDir[] {
    return recordingDirs(this.runDir, ranks);
  }

  /** Sub-recordings of non-zero ranks (`rank-NNN/` with a manifest), in rank order. */
  rankDirs(): string[] {
    return rankSubdirs(this.runDir);
  }

  /**
   * Events of every rank (rank-attributed), ordered by time; a torn or garbage line is
   * skipped. `query` filters while the files are read, so memory grows with the events
   * kept, never with events.jsonl (use `streamEvents` to visit them all in bounded memory).
   */
  events(query: EventQuery = {}): RunEvent[] {
    return this.eventsWithDiagnostics(query).events;
  }

  /** Events plus how many lines were skipped as unreadable. */
  eventsWithDiagnostics(query: EventQuery = {}): EventsRead {
    const keep = eventFilter(query);
    const last = query.last;
    if (last !== undefined && !(Number.isSafeInteger(last) && last >= 0)) {
      throw new RlprobeError('RLPROBE_INVALID_QUERY', `invalid event query last: expected a non-negative integer (got ${String(last)})`);
    }
    const files = this.eventFiles();
    // each file's last ones: the last ones by time when each file is in time order
    const all = files.map((f) => readEventsFile(f, this.eventMigration(), keep, last));
    // stable sort: events with equal timestamps keep their file order
    const events = files.length === 1 ? all[0].events : all.flatMap((r) => r.events).sort((a, b) => a.timestamp - b.timestamp);
    return {
      events: last === undefined ? events : events.slice(Math.max(0, events.length - last)),
      skippedLines: all.reduce((n, r) => n + r.skippedLines, 0),
    };
  }

  /**
   * Streams the events `query` selects, without holding them: each rank's events.jsonl is
   * read a chunk at a time and the ranks are merged by time (each file in its own order).
   * Skipped lines are added to `diagnostics` as they are met. `query.last` is not
   * supported here (it needs the end first): use `events`.
   */
  *streamEvents(query: Omit<EventQuery, 'last'> = {}, diagnostics?: EventsDiagnostics): Generator<RunEvent> {
    const keep = eventFilter(query);
    const streams = this.eventFiles().map((f) => streamEventsFile(f, { migrate: this.eventMigration(), diagnostics }));
    const heads: (RunEvent | null)[] = streams.map((s) => nextKept(s, keep));
    for (;;) {
      // the earliest head; a tie goes to the lower rank, as the stable sort of `events` does
      let at = -1;
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i];
        if (h !== null && (at < 0 || h.timestamp < heads[at]!.timestamp)) at = i;
      }
      if (at < 0) return;
      yield heads[at]!;
      heads[at] = nextKept(streams[at], keep);
    }
  }

  /**
   * The run's (rank 0) events written since byte `offset` of its events.jsonl, complete
   * lines only, and where the next read starts: what a follower tails without reading
   * the file again (`ino` from the last read notices a replaced file; `maxBytes` bounds one
   * read, the rest comes with the next).
   */
  eventsFrom(offset: number, ino?: number, maxBytes?: number): EventsFrom {
    return readEventsFrom(path.join(this.runDir, 'events.jsonl'), offset, { migrate: this.eventMigration(), ino, maxBytes });
  }

  /** events.jsonl of the run and of each rank directory, in rank order. */
  private eventFiles(): string[] {
    return [this.runDir, ...this.rankDirs()].map((d) => path.join(d, 'events.jsonl'));
  }

  private eventMigration(): ((e: Record<string, unknown>) => Record<string, unknown>) | undefined {
    return this.adapter.migrated ? (e) => this.adapter.event(e) : undefined;
  }

  /** Last modification time of any step or event file (ms since epoch), or null. */
  lastWriteMs(): number | null {
    let last: number | null = null;
    const candidates = [path.join(this.runDir, 'events.jsonl'), ...this.stepFiles().map((f) => f.path)];
    for (const f of candidates) {
      try {
        const t = statSync(f).mtimeMs;
        if (last === null || t > last) last = t;
      } catch {
        // vanished (compaction): ignore
      }
    }
    return last;
  }
}

function* flattenBatches<T>(open: () => Iterable<T[]>): Generator<T, void, undefined> {
  for (const batch of open()) yield* batch;
}
