/**
 * The writing half of every importer: reads the source read-only while hashing it, and
 * writes a normal recording through the Recorder, its manifest saying where it came from
 * (`extra.source`, the contract with the doctor: see `ImportSource`).
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, readdirSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';

import { RlprobeError } from '../errors.js';
import { openSource, readError } from './read-error.js';
import { readEventsFile } from '../reader/events-file.js';
import { Recorder } from '../recorder/recorder.js';
import { RECORDER_EVENT_KINDS } from '../schema/event.js';
import type { StepRecord } from '../schema/step-record.js';
import type { MappedSteps } from './mapping.js';

export type ImportFormat = 'trl' | 'verl' | 'jsonl' | 'tensorboard';

/** One file of a source made of several (TensorBoard: the event files of a log directory). */
export interface ImportedFile {
  /** Absolute path. */
  path: string;
  sha256: string;
  bytes: number;
  /** Whole records read. */
  records: number;
}

/** What reading a binary, multi-file source adds to ImportSource and ImportResult (TensorBoard). */
export interface ImportReadReport {
  /** The files read, in the order they were merged (a later file's value of a tag and step wins). */
  files?: ImportedFile[];
  /** Records read over all files. */
  records?: number;
  /** Summaries that are no scalar (histograms, images, text), skipped: their count by tag. */
  skipped_non_scalar?: Record<string, number>;
  /** Whose tag names were mapped onto step columns: trl (`train/…`), verl (`actor/…`, `critic/…`), or none. */
  tag_family?: 'trl' | 'verl' | 'none';
  /** What the import read past that a person must know (a torn last record, values written twice). */
  warnings?: string[];
}

export interface ImportOptions {
  /** Overrides the algorithm inferred from the source (grpo, ppo, …). */
  algorithm?: string;
}

/** `manifest.extra.source` of an imported run. */
export interface ImportSource extends ImportReadReport {
  kind: 'import';
  format: ImportFormat;
  /** Absolute path of the source file (TensorBoard: the event file or the log directory). */
  path: string;
  /**
   * Hex SHA-256 of the source bytes. A log directory: of the lines `<sha256>  <path relative
   * to it>\n` of its event files in path order (as `sha256sum` prints them).
   */
  sha256: string;
  imported_at: string;
  /** Step rows written. */
  rows: number;
  /** Non-empty source lines (TRL: log_history entries; TensorBoard: records but each file's header) that yielded no step row. */
  skipped_lines: number;
  /**
   * Step column → absolute resolution its source values were printed with (e.g. 0.001 for
   * verl's 3-decimal console). The doctor ignores differences and zeros below it. Columns
   * imported at full precision are absent.
   */
  resolution: Record<string, number>;
  /**
   * Present (false) when `kl_mean` is a per-sequence KL (TRL PPO's objective/kl) instead of
   * the format's per-token KL: absolute KL thresholds do not apply.
   */
  kl_per_token?: false;
  /** Run-level figures that are no step's metrics (TRL: the final train_runtime, train_loss…). */
  summary?: Record<string, unknown>;
}

/** What an importer read, ready to write. */
export interface ParsedImport extends MappedSteps {
  sha256: string;
  skippedLines: number;
  algorithm: string;
  /** False when kl_mean is a per-sequence KL. */
  klPerToken?: boolean;
  trainerConfig?: Record<string, unknown>;
  summary?: Record<string, unknown>;
  report?: ImportReadReport;
}

export interface ImportResult extends ImportReadReport {
  format: ImportFormat;
  source: string;
  sha256: string;
  out_dir: string;
  run_id: string;
  algorithm: string;
  rows: number;
  columns: string[];
  first_step: number;
  last_step: number;
  skipped_lines: number;
  resolution: Record<string, number>;
}

/** Ring room per queued record on the native side (SLOTS_PER_RECORD in crates/rlprobe-core/src/writer/mod.rs). */
const RING_SLOTS_PER_RECORD = 96;
const QUEUE_CAPACITY = 16_384;
/** Half the ring: room left for the largest reservation and the wrap-around. */
const FLUSH_BUDGET_SLOTS = (QUEUE_CAPACITY * RING_SLOTS_PER_RECORD) / 2;
const FLUSH_TIMEOUT_MS = 60_000;
const READ_CHUNK = 1 << 20;


/** Streams the lines of `file` (opened read-only) to `onLine`; returns the hex SHA-256 of its bytes. */
export function readSourceLines(file: string, onLine: (line: string, lineNo: number) => void): string {
  const fd = openSource(file);
  try {
    const hash = createHash('sha256');
    const decoder = new StringDecoder('utf8');
    const buf = Buffer.allocUnsafe(READ_CHUNK);
    let rest = '';
    let lineNo = 0;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch (error) {
        throw readError(file, error);
      }
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      const lines = (rest + decoder.write(buf.subarray(0, n))).split('\n');
      rest = lines.pop()!;
      for (const line of lines) onLine(line.endsWith('\r') ? line.slice(0, -1) : line, ++lineNo);
    }
    rest += decoder.end();
    if (rest !== '') onLine(rest, ++lineNo);
    return hash.digest('hex');
  } finally {
    closeSync(fd);
  }
}

/** The whole text of `file` (read-only, BOM dropped) and the hex SHA-256 of its bytes. */
export function readSourceText(file: string): { text: string; sha256: string } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw readError(file, error);
  }
  return { text: bytes.toString('utf8').replace(/^\uFEFF/, ''), sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Refuses an existing file or non-empty directory; returns whether the directory already existed. */
function checkTarget(outDir: string): boolean {
  if (!existsSync(outDir)) return false;
  if (!statSync(outDir).isDirectory()) {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `cannot import into ${outDir}: it exists and is not a directory`);
  }
  if (readdirSync(outDir).length > 0) {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `cannot import into ${outDir}: the directory is not empty (import into a new directory)`);
  }
  return true;
}

/** Removes what a failed import wrote, so that the import can be retried into the same place. */
function removeWritten(outDir: string, existed: boolean): void {
  if (!existed) {
    rmSync(outDir, { recursive: true, force: true });
    return;
  }
  for (const name of readdirSync(outDir)) rmSync(path.join(outDir, name), { recursive: true, force: true });
}

/**
 * Reads `sourceFile` with `read` and writes the recording to `outDir`, which must be new or
 * empty. Throws RlprobeError naming the file (and line) on bad input; nothing is left behind.
 */
export function importRun(
  format: ImportFormat,
  sourceFile: string,
  outDir: string,
  options: ImportOptions,
  read: (source: string) => ParsedImport,
): ImportResult {
  const source = path.resolve(sourceFile);
  const out = path.resolve(outDir);
  if (options.algorithm !== undefined && (typeof options.algorithm !== 'string' || options.algorithm === '')) {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid algorithm ${JSON.stringify(options.algorithm)}: expected a non-empty name`);
  }
  const existed = checkTarget(out);
  const parsed = read(source);
  if (parsed.records.length === 0) {
    throw new RlprobeError('RLPROBE_IMPORT_FAILED', `${source}: no step rows found (${parsed.skippedLines} non-empty lines skipped); is this a ${format} log?`);
  }
  const algorithm = options.algorithm ?? parsed.algorithm;
  const sourceMeta: ImportSource = {
    kind: 'import',
    format,
    path: source,
    sha256: parsed.sha256,
    imported_at: new Date().toISOString(),
    rows: parsed.records.length,
    skipped_lines: parsed.skippedLines,
    resolution: parsed.resolution,
    ...(parsed.klPerToken === false ? { kl_per_token: false as const } : {}),
    ...(parsed.summary ? { summary: parsed.summary } : {}),
    ...parsed.report,
  };
  mkdirSync(out, { recursive: true });
  try {
    writeRecords(out, parsed.records, {
      runId: path.basename(out),
      algorithm,
      trainerConfig: parsed.trainerConfig ?? {},
      notes: `imported from the ${format} log ${source}`,
      manifestExtra: { source: sourceMeta },
    });
  } catch (error) {
    removeWritten(out, existed);
    throw error;
  }
  return {
    format,
    source,
    sha256: parsed.sha256,
    out_dir: out,
    run_id: path.basename(out),
    algorithm,
    rows: parsed.records.length,
    columns: parsed.columns,
    first_step: parsed.records[0].step,
    last_step: parsed.records[parsed.records.length - 1].step,
    skipped_lines: parsed.skippedLines,
    resolution: parsed.resolution,
    ...parsed.report,
  };
}

/**
 * Logs every record and closes. The queue is paced with `flushSync` so that nothing is ever
 * dropped; the close counters must account for every record.
 */
function writeRecords(
  out: string,
  records: StepRecord[],
  meta: { runId: string; algorithm: string; trainerConfig: Record<string, unknown>; notes: string; manifestExtra: Record<string, unknown> },
): void {
  const rec = new Recorder(out, {
    ...meta,
    rank: 0,
    worldSize: 1,
    captureEnvironment: false,
    installHandlers: false,
    queueCapacity: QUEUE_CAPACITY,
    flushSteps: 1_000_000,
    flushIntervalMs: 3_600_000,
  });
  let failure: string | null = null;
  try {
    let queued = 0;
    let slots = 0;
    for (const record of records) {
      // a record takes its length slot, step and timestamp, and an (id, value) pair per column
      const cost = 3 + 2 * (Object.keys(record).length + Object.keys(record.reward_components ?? {}).length + Object.keys(record.extra ?? {}).length);
      if (queued > 0 && (slots + cost > FLUSH_BUDGET_SLOTS || queued >= QUEUE_CAPACITY / 2)) {
        if (!rec.flushSync(FLUSH_TIMEOUT_MS)) {
          failure = `the writer did not flush within ${FLUSH_TIMEOUT_MS / 1000} s`;
          break;
        }
        queued = 0;
        slots = 0;
      }
      rec.logStep(record);
      queued++;
      slots += cost;
    }
  } finally {
    const { counters: c, error } = rec.close();
    failure ??= error;
    if (failure === null && (c.written !== records.length || c.dropped > 0 || c.bad > 0)) {
      const bad = c.bad > 0 ? `; first refusal: ${firstBadRecord(out)}` : '';
      failure = `${records.length} rows to write, ${c.written} written, ${c.dropped} dropped, ${c.bad} refused${bad}`;
    }
  }
  if (failure !== null) throw new RlprobeError('RLPROBE_IMPORT_FAILED', `writing ${out} failed: ${failure}`);
}

/** The message of the first bad_record event (why the writer refused a record). */
function firstBadRecord(out: string): string {
  const event = readEventsFile(path.join(out, 'events.jsonl')).events.find((e) => e.kind === RECORDER_EVENT_KINDS.badRecord);
  return event?.message ?? 'no bad_record event';
}
