/**
 * `probe import tensorboard`: TensorBoard event files, one file or every
 * `events.out.tfevents.*` under a log directory, as TRL and verl write them:
 * - TRL (transformers' TensorBoardCallback): its trainer_state keys behind `train/`
 *   (`train/reward`, `train/rewards/<fn>/mean`), held-out ones as `eval/<key>`;
 * - verl (its `tensorboard` tracking backend): the metric names as they are.
 * Scalars by tag, step and wall time; the tag names mapped by the TRL and verl importers'
 * own tables, every other tag to `extra.<tag>`. Histograms, images and text are skipped and
 * counted per tag. A torn last record (a writer that crashed) is read up to the tear, with
 * a warning; a checksum mismatch anywhere is an error naming the file and byte offset.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { SourceSteps, rulesUnderPrefix, stepOf } from './mapping.js';
import type { MappingRules } from './mapping.js';
import { checkOneRun, eventFilesOf } from './tensorboard-files.js';
import type { RunFolder } from './tensorboard-files.js';
import { ProtoError, decodeEvent } from './tensorboard-proto.js';
import type { TbEvent } from './tensorboard-proto.js';
import { summaryKind } from './tensorboard-scalar.js';
import { readTfRecords } from './tfrecord.js';
import type { TfRecordTear } from './tfrecord.js';
import { TRL_RULES, trlAlgorithm, trlKlPerToken } from './trl.js';
import { VERL_RULES, verlAlgorithm } from './verl.js';
import { importRun } from './write-import.js';
import type { ImportOptions, ImportReadReport, ImportResult, ImportedFile, ParsedImport } from './write-import.js';

type TagFamily = NonNullable<ImportReadReport['tag_family']>;

/** transformers' TensorBoardCallback writes a log's keys as `train/<key>`, `eval_<key>` as `eval/<key>`. */
const TRL_TRAIN = 'train/';
const TRL_PREFIXES = [TRL_TRAIN, 'eval/'];
/** verl's metric groups (ray_trainer's compute_*_metrics, validation, timing). */
const VERL_PREFIXES = ['actor/', 'critic/', 'response_length/', 'prompt_length/', 'timing_s/', 'timing_per_token_ms/', 'val-core/', 'val-aux/', 'perf/', 'training/'];
const VERL_SOURCES = new Set(VERL_RULES.fields.flatMap(([, sources]) => sources));
/**
 * Trainer.train()'s closing figures, logged once at the last step: run-level figures, not a
 * step's metrics; kept as the run summary, as `probe import trl` keeps them.
 */
const TRL_SUMMARY_KEYS = ['train_runtime', 'train_samples_per_second', 'train_steps_per_second', 'total_flos', 'train_loss'];
/** The first record of every event file: Event{file_version: "brain.Event:2"}. */
const FILE_VERSION_PREFIX = 'brain.Event:';

interface Point {
  step: number;
  tag: string;
  value: number;
  wallTime: number;
}

/** One event file as read. */
interface EventFileScan {
  file: ImportedFile;
  /** Wall time of its file_version header: when its writer started (orders the files). */
  startedAt: number;
  tear: TfRecordTear | null;
  points: Point[];
  nonScalar: Map<string, number>;
  /** Records other than the header that held no scalar (graphs, session logs, only histograms…). */
  skipped: number;
  /** Scalars whose tag is empty (no column can be named after it). */
  emptyTags: number;
}

function importError(message: string): RlprobeError {
  return new RlprobeError('RLPROBE_IMPORT_FAILED', message);
}

/** Adds the scalars of one event record to `scan`. */
function addEvent(scan: EventFileScan, event: TbEvent, where: string): void {
  let scalars = 0;
  for (const v of event.values) {
    const kind = summaryKind(v);
    if (kind.kind === 'other') {
      scan.nonScalar.set(v.tag, (scan.nonScalar.get(v.tag) ?? 0) + 1);
      continue;
    }
    if (kind.kind === 'bad') throw importError(`${where}: tag ${JSON.stringify(v.tag)}: ${kind.why}`);
    if (v.tag === '') {
      scan.emptyTags++;
      continue;
    }
    if (!Number.isFinite(event.wallTime)) throw importError(`${where}: tag ${JSON.stringify(v.tag)}: wall_time must be finite Unix seconds (got ${event.wallTime})`);
    const step = stepOf(typeof event.step === 'bigint' ? Number(event.step) : event.step, `${where}: tag ${JSON.stringify(v.tag)}`);
    scan.points.push({ step, tag: v.tag, value: kind.value, wallTime: event.wallTime });
    scalars++;
  }
  if (scalars === 0) scan.skipped++;
}

/** Reads one event file: every whole record, verified, decoded. */
function scanEventFile(file: string): EventFileScan {
  const scan: EventFileScan = {
    file: { path: file, sha256: '', bytes: 0, records: 0 },
    startedAt: NaN,
    tear: null,
    points: [],
    nonScalar: new Map(),
    skipped: 0,
    emptyTags: 0,
  };
  let first = true;
  const read = readTfRecords(file, (data, offset) => {
    const where = `${file}: byte ${offset}`;
    let event: TbEvent;
    try {
      event = decodeEvent(data);
    } catch (error) {
      if (!(error instanceof ProtoError)) throw error;
      throw importError(`${where}: ${first ? 'not a TensorBoard event file: ' : ''}the record is no tensorboard Event (${error.message})`);
    }
    if (first) {
      first = false;
      if (event.fileVersion === null || !event.fileVersion.startsWith(FILE_VERSION_PREFIX)) {
        const got = event.fileVersion === null ? 'none' : JSON.stringify(event.fileVersion);
        throw importError(`${where}: not a TensorBoard event file: its first record has no file_version "${FILE_VERSION_PREFIX}…" (got ${got})`);
      }
      scan.startedAt = event.wallTime;
      if (event.values.length === 0) return;
    }
    addEvent(scan, event, where);
  });
  scan.file = { path: file, sha256: read.sha256, bytes: read.bytes, records: read.records };
  scan.tear = read.tear;
  return scan;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function tearWarning(scan: EventFileScan): string {
  const t = scan.tear!;
  const read = `read the ${plural(scan.file.records, 'record')} before`;
  if (t.kind === 'zeros') {
    return `${scan.file.path}: the last ${plural(t.have, 'byte')}, from byte ${t.offset} on, are zeros (a crash before the data reached the disk); ${read} them`;
  }
  const torn = t.need === null ? `inside its 12-byte header (${t.have} bytes)` : `${t.have} of its ${t.need} bytes are in the file`;
  return `${scan.file.path}: the last record (at byte ${t.offset}) is torn, ${torn}: a writer that crashed or is still writing; ${read} it`;
}

/** Which importer's names the tags are, with a warning when that is not clear. */
function tagFamilyOf(tags: Set<string>): { family: TagFamily; warning: string | null } {
  const trl = [...tags].filter((t) => TRL_PREFIXES.some((p) => t.startsWith(p))).length;
  const verl = [...tags].filter((t) => VERL_SOURCES.has(t) || VERL_PREFIXES.some((p) => t.startsWith(p))).length;
  if (trl === 0 && verl === 0) {
    return { family: 'none', warning: `none of the ${plural(tags.size, 'scalar tag')} is TRL's (train/…, eval/…) or verl's (actor/…, critic/…, …): every scalar is kept as extra.<tag>` };
  }
  if (trl > 0 && verl > 0) {
    const family = trl >= verl ? 'trl' : 'verl';
    return { family, warning: `${trl} TRL-style (train/…, eval/…) and ${verl} verl-style (actor/…, critic/…) tags: mapped as ${family}; the others are kept as extra.<tag>` };
  }
  return { family: trl > 0 ? 'trl' : 'verl', warning: null };
}

/** The run directories the files are in; throws unless they are one run. */
function checkRunFolders(source: string, scans: EventFileScan[]): void {
  const folders = new Map<string, RunFolder>();
  for (const s of scans) {
    const dir = path.dirname(s.file.path);
    let f = folders.get(dir);
    if (f === undefined) folders.set(dir, (f = { dir, files: 0, tags: new Set(), firstStep: Infinity, lastStep: -Infinity }));
    f.files++;
    for (const p of s.points) {
      f.tags.add(p.tag);
      if (p.step < f.firstStep) f.firstStep = p.step;
      if (p.step > f.lastStep) f.lastStep = p.step;
    }
  }
  checkOneRun(source, [...folders.values()]);
}

/** The digest of a log directory: SHA-256 of `sha256sum`'s lines for its event files. */
function directoryDigest(source: string, files: ImportedFile[]): string {
  const lines = files.map((f) => ({ rel: path.relative(source, f.path), sha256: f.sha256 })).sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return createHash('sha256')
    .update(lines.map((l) => `${l.sha256}  ${l.rel}\n`).join(''))
    .digest('hex');
}

/** The files that hold records; warns of tears and of empty files, refuses a lone empty one. */
function filesWithRecords(source: string, scans: EventFileScan[], isDir: boolean, warnings: string[]): EventFileScan[] {
  const withRecords: EventFileScan[] = [];
  for (const s of scans) {
    if (s.tear !== null) warnings.push(tearWarning(s));
    if (s.file.records > 0) {
      withRecords.push(s);
      continue;
    }
    const what = s.file.bytes === 0 ? 'empty file: no event record' : `no whole event record in its ${plural(s.file.bytes, 'byte')}`;
    if (!isDir) throw importError(`${s.file.path}: ${what}; is this a TensorBoard event file?`);
    if (s.tear === null) warnings.push(`${s.file.path}: ${what} (a writer that never flushed): skipped`);
  }
  if (withRecords.length === 0) throw importError(`${source}: its ${plural(scans.length, 'event file')} hold${scans.length === 1 ? 's' : ''} no whole record`);
  return withRecords;
}

/** Files in the order their writers started: a later writer (a resumed run) wins a tag and step. */
function byWriterStart(a: EventFileScan, b: EventFileScan): number {
  return a.startedAt - b.startedAt || (a.file.path < b.file.path ? -1 : 1);
}

/** Step → tag → the value kept, the files merged in the order given, a later write winning. */
function mergeByStep(ordered: EventFileScan[], warnings: string[]): Map<number, Map<string, Point>> {
  const rows = new Map<number, Map<string, Point>>();
  let rewritten = 0;
  for (const s of ordered) {
    for (const p of s.points) {
      let row = rows.get(p.step);
      if (row === undefined) rows.set(p.step, (row = new Map()));
      const old = row.get(p.tag);
      if (old !== undefined && !Object.is(old.value, p.value)) rewritten++;
      row.set(p.tag, p);
    }
  }
  if (rewritten > 0) {
    warnings.push(`${plural(rewritten, 'value')} written again for the same tag and step with another value (a resumed or restarted run?): the last written is kept`);
  }
  return rows;
}

/** The merged rows as source steps, each step's wall time, and TRL's closing figures as the run summary. */
function toSourceSteps(rows: Map<number, Map<string, Point>>, family: TagFamily): { steps: SourceSteps; wallTimes: Map<number, number>; summary?: Record<string, unknown> } {
  const steps = new SourceSteps();
  const wallTimes = new Map<number, number>();
  let summary: Record<string, unknown> | undefined;
  for (const step of [...rows.keys()].sort((a, b) => a - b)) {
    const row = rows.get(step)!;
    if (family === 'trl') {
      for (const key of TRL_SUMMARY_KEYS) {
        const p = row.get(TRL_TRAIN + key);
        if (p === undefined) continue;
        summary = { ...summary, [key]: p.value };
        row.delete(TRL_TRAIN + key);
      }
    }
    // the step's wall time: when its first kept scalar was written (eval follows later)
    let wallTime = Infinity;
    for (const p of row.values()) {
      steps.set(step, p.tag, p.value);
      wallTime = Math.min(wallTime, p.wallTime);
    }
    if (row.size > 0) wallTimes.set(step, wallTime);
  }
  return { steps, wallTimes, summary };
}

function parseTensorboard(source: string): ParsedImport {
  const { files, isDir } = eventFilesOf(source);
  const scans = files.map(scanEventFile);
  const warnings: string[] = [];
  const withRecords = filesWithRecords(source, scans, isDir, warnings).sort(byWriterStart);
  checkRunFolders(source, withRecords);
  const rows = mergeByStep(withRecords, warnings);
  const emptyTags = scans.reduce((n, s) => n + s.emptyTags, 0);
  if (emptyTags > 0) warnings.push(`${plural(emptyTags, 'scalar')} with an empty tag skipped (no column can be named after it)`);

  const tags = new Set<string>();
  for (const row of rows.values()) for (const tag of row.keys()) tags.add(tag);
  const records = scans.reduce((n, s) => n + s.file.records, 0);
  const nonScalar = new Map<string, number>();
  for (const s of scans) for (const [tag, n] of s.nonScalar) nonScalar.set(tag, (nonScalar.get(tag) ?? 0) + n);
  if (tags.size === 0) {
    const others = nonScalar.size > 0 ? `; non-scalar summaries skipped: ${[...nonScalar].map(([t, n]) => `${t} ×${n}`).join(', ')}` : '';
    throw importError(`${source}: no scalar summary in ${plural(records, 'record')} of ${plural(scans.length, 'event file')}${others}`);
  }
  const { family, warning } = tagFamilyOf(tags);
  if (warning !== null) warnings.push(warning);

  const { steps, wallTimes, summary } = toSourceSteps(rows, family);
  const trlKeys = new Set([...tags].filter((t) => t.startsWith(TRL_TRAIN)).map((t) => t.slice(TRL_TRAIN.length)));
  const rules: MappingRules = family === 'trl' ? rulesUnderPrefix(TRL_RULES, TRL_TRAIN) : family === 'verl' ? VERL_RULES : { fields: [] };
  const mapped = steps.map(rules);
  for (const record of mapped.records) record.timestamp = wallTimes.get(record.step);

  // the merge order, then the files without records
  const allFiles = [...withRecords, ...scans.filter((s) => s.file.records === 0)].map((s) => s.file);
  return {
    ...mapped,
    sha256: isDir ? directoryDigest(source, allFiles) : scans[0].file.sha256,
    skippedLines: scans.reduce((n, s) => n + s.skipped, 0),
    algorithm: family === 'trl' ? trlAlgorithm(trlKeys) : family === 'verl' ? verlAlgorithm(tags) : 'unknown',
    klPerToken: family === 'trl' ? trlKlPerToken(trlKeys) : true,
    summary,
    report: {
      files: allFiles,
      records,
      skipped_non_scalar: Object.fromEntries([...nonScalar].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
      tag_family: family,
      warnings,
    },
  };
}

/**
 * Imports TensorBoard event files (one file, or a log directory holding one run) into a new
 * run directory. Warnings (a torn last record, values written twice) are in the result.
 */
export function importTensorboard(source: string, outDir: string, options: ImportOptions = {}): ImportResult {
  return importRun('tensorboard', source, outDir, options, parseTensorboard);
}
