/**
 * Stage now, deliver later: for trainers whose run storage is not reachable when a trial
 * finishes. `stageTrial` copies the trial's durable bytes into `<staging>/<capture key>/files/`
 * and writes `.probe-capture.json` beside them, recording two things apart:
 *
 * - collection (per file: collected, missing, skipped, unknown, empty) — fixed at staging time;
 * - delivery (per collected file: pending, delivered, failed with attempts and last error).
 *
 * `deliverStaged` copies pending files into the run (a few at a time), verifying each
 * against the sha256 taken at staging, and journals each confirmation once the copy is on
 * disk (delivery-journal.ts: an append, not a rewrite of the record): an outage part way
 * leaves the exact list of unconfirmed files, a kill leaves the journal, and delivering
 * again finishes the job without duplicates. The capture becomes visible in the run only
 * when every file is in.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { parseOptions, StageOptionsSchema } from './capture-options.js';
import type { StageOptions } from './capture-options.js';
import { captureKeyOf, trialIdentity } from './capture-key.js';
import { withCaptureLock } from './capture-lock.js';
import { collectTrial, copyCollected, outputInside, pruneTo } from './collect.js';
import { COPY_CONCURRENCY, mapConcurrent } from './concurrently.js';
import { DeliveryJournal, journalPath, readJournal, removeJournal } from './delivery-journal.js';
import { commitFiles } from './durable-batch.js';
import { countLedger } from './ledger.js';
import type { LedgerEntry, StatusCounts } from './ledger.js';
import { FILES_DIR } from './manifest.js';
import type { CaptureManifest } from './manifest.js';
import { beginCapture, captureFilesDir, finishCapture, finishedCaptureOf, labelsOf, priorManifest, removeStale, runIdOf, supersedeUnfinished } from './run-store.js';
import { hostPath, isCaptureKey, isCleanRelative, stepsProblem } from './safe-path.js';
import type { TrialInfo } from './trial-info.js';
import { copyVerified, DestinationDirs, sha256OfFile, writeDurable } from './verified-copy.js';

export const STAGED_FILE = '.probe-capture.json';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface FileDelivery {
  status: DeliveryStatus;
  attempts: number;
  last_error: string | null;
  delivered_at: string | null;
}

export interface StagedCapture {
  kind: 'rlprobe.staged_trial';
  format_version: 1;
  capture_key: string;
  step: number;
  sample_id: string | null;
  group_id: string | null;
  labels: Record<string, string>;
  source: { trial_dir: string; context: Record<string, string>; staged_at: string };
  trial: TrialInfo;
  /** The capture's span limit (`maxSpans`), when one was given. */
  max_spans?: number;
  /** Collection status of every file (the ledger entries). */
  collection: { counts: StatusCounts; bytes: number; entries: LedgerEntry[] };
  delivery: {
    status: DeliveryStatus;
    attempts: number;
    last_error: string | null;
    last_attempt_at: string | null;
    delivered_at: string | null;
    run_dir: string | null;
    /** Per collected file. */
    files: Record<string, FileDelivery>;
  };
}

function writeStaged(dir: string, s: StagedCapture): void {
  writeDurable(path.join(dir, STAGED_FILE), `${JSON.stringify(s, null, 2)}\n`);
}

export function readStaged(dir: string): StagedCapture {
  const file = path.join(dir, STAGED_FILE);
  let s: StagedCapture;
  try {
    s = JSON.parse(readFileSync(file, 'utf8')) as StagedCapture;
  } catch (e) {
    throw new RlprobeError((e as NodeJS.ErrnoException).code === 'ENOENT' ? 'RLPROBE_NOT_FOUND' : 'RLPROBE_BAD_MANIFEST', `${file}: ${(e as Error).message}`);
  }
  if (s?.kind !== 'rlprobe.staged_trial') throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: not a staged trial (kind ${JSON.stringify(s?.kind)})`);
  // the record names paths we will write to: refuse one that could lead out of the run
  if (!isCaptureKey(s.capture_key)) throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: capture_key ${JSON.stringify(s.capture_key)} is not a capture key`);
  const bad = Object.keys(s.delivery?.files ?? {}).find((p) => !isCleanRelative(p));
  if (bad !== undefined) throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: delivery.files names ${JSON.stringify(bad)}, not a trial-relative path`);
  const problem = collectedProblem(s.collection?.entries, s.delivery?.files) ?? stepsProblem(s.trial?.steps);
  if (problem !== null) throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: ${problem}`);
  applyJournal(dir, s);
  return s;
}

/** Folds the confirmations a delivery journaled (and did not fold itself: it was killed, or is running) into `s`. */
function applyJournal(dir: string, s: StagedCapture): void {
  for (const line of readJournal(dir, { capture_key: s.capture_key, staged_at: s.source.staged_at })) {
    if ('attempt' in line) {
      s.delivery.attempts = line.attempt;
      s.delivery.last_attempt_at = line.at;
      s.delivery.run_dir = line.run_dir;
      s.delivery.status = 'pending';
      s.delivery.last_error = `a delivery began at ${line.at} and has not finished (still running, or interrupted: deliver again)`;
      continue;
    }
    const f = s.delivery.files[line.file];
    if (f === undefined) throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${journalPath(dir)}: names ${JSON.stringify(line.file)}, not a file of the staged record`);
    f.status = line.status;
    f.attempts = line.attempts;
    f.last_error = line.last_error;
    f.delivered_at = line.delivered_at;
  }
}

/**
 * Why the collected entries cannot be trusted, or null: each must be a clean path with a
 * sha256 and a size (delivery verifies every copy against it), and exactly the files the
 * delivery tracks.
 */
function collectedProblem(entries: unknown, files: Record<string, FileDelivery> | undefined): string | null {
  if (!Array.isArray(entries)) return 'collection.entries is not a list';
  const collected = new Set<string>();
  for (const e of entries as LedgerEntry[]) {
    if (e?.status !== 'collected') continue;
    if (!isCleanRelative(e.path)) return `collection.entries names ${JSON.stringify(e.path)}, not a trial-relative path`;
    if (typeof e.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(e.sha256)) return `collection.entries ${JSON.stringify(e.path)} has no sha256`;
    if (!Number.isSafeInteger(e.size) || (e.size as number) < 0) return `collection.entries ${JSON.stringify(e.path)} has no size`;
    collected.add(e.path);
  }
  const tracked = Object.keys(files ?? {});
  if (tracked.length !== collected.size || tracked.some((p) => !collected.has(p))) return 'delivery.files does not match the collected files';
  return null;
}

/** Copies a trial into `<to>/<capture key>/` for later delivery; staging it again restarts its delivery. */
export async function stageTrial(trialDir: string, options: StageOptions): Promise<{ dir: string; staged: StagedCapture }> {
  const o = parseOptions(StageOptionsSchema, 'stage', options);
  const trial = collectTrial(trialDir, o.maxFileBytes, outputInside(o.to, 'the staging directory this capture writes into'));
  const dir = path.join(o.to, trial.key);
  dropUnfinishedStaged(o.to, trial.key, trial.info, path.basename(trial.root));
  // a new staging starts its delivery afresh: what an earlier one journaled does not apply
  removeJournal(dir);
  const filesRoot = path.join(dir, FILES_DIR);
  mkdirSync(filesRoot, { recursive: true });
  pruneTo(filesRoot, new Set(trial.files));
  const entries = await copyCollected(trial, filesRoot);
  pruneTo(filesRoot, new Set(entries.filter((e) => e.status === 'collected').map((e) => e.path)));
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const files: Record<string, FileDelivery> = {};
  for (const e of entries) if (e.status === 'collected') files[e.path] = { status: 'pending', attempts: 0, last_error: null, delivered_at: null };
  const sampleId = o.sampleId ?? null;
  const groupId = o.groupId ?? null;
  const staged: StagedCapture = {
    kind: 'rlprobe.staged_trial',
    format_version: 1,
    capture_key: trial.key,
    step: o.step,
    sample_id: sampleId,
    group_id: groupId,
    labels: labelsOf(sampleId, groupId),
    source: { trial_dir: path.resolve(trialDir), context: o.context ?? {}, staged_at: new Date().toISOString() },
    trial: trial.info,
    ...(o.maxSpans !== undefined ? { max_spans: o.maxSpans } : {}),
    collection: { ...countLedger(entries), entries },
    delivery: { status: 'pending', attempts: 0, last_error: null, last_attempt_at: null, delivered_at: null, run_dir: null, files },
  };
  writeStaged(dir, staged);
  return { dir, staged };
}

/** Staging a finished trial makes a staged copy of it taken before it finished obsolete: removed. */
function dropUnfinishedStaged(to: string, key: string, info: TrialInfo, dirName: string): void {
  if (info.id === null) return;
  const provisional = captureKeyOf(info.name, trialIdentity(null, dirName));
  if (provisional === key) return;
  const old = path.join(to, provisional);
  try {
    const s = readStaged(old);
    if (s.trial.id === null && s.trial.name === info.name) rmSync(old, { recursive: true, force: true });
  } catch {
    /* none staged, or not ours to remove */
  }
}

/** Staged capture directories under `dir`: `dir` itself, or its children (a spool). */
export function stagedDirs(dir: string): string[] {
  if (existsSync(path.join(dir, STAGED_FILE))) return [dir];
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    throw new RlprobeError('RLPROBE_NOT_FOUND', `no staging directory at ${dir}`);
  }
  const out = names.map((n) => path.join(dir, n)).filter((d) => existsSync(path.join(d, STAGED_FILE)));
  if (out.length === 0) throw new RlprobeError('RLPROBE_NOT_FOUND', `no staged trial in ${dir} (no ${STAGED_FILE} in it or its subdirectories)`);
  return out;
}

export interface DeliveryResult {
  dir: string;
  key: string;
  status: DeliveryStatus;
  delivered: number;
  /** Collected files not yet confirmed in the run, with their last error. */
  unconfirmed: { path: string; status: DeliveryStatus; attempts: number; last_error: string | null }[];
  manifest: CaptureManifest | null;
  /** Why the staged record itself could not be used (unreadable, tampered, …). */
  error?: string;
}

/** True when every staged file is in the run at its staged size (a cheap check, no hashing). */
function stillInRun(runFiles: string, s: StagedCapture): boolean {
  for (const e of s.collection.entries) {
    if (e.status !== 'collected') continue;
    try {
      if (statSync(hostPath(runFiles, e.path)).size !== e.size) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** True when the run already holds the staged bytes of `rel` (size and sha256, read in chunks). */
function alreadyInRun(runFiles: string, rel: string, e: LedgerEntry): boolean {
  try {
    const file = hostPath(runFiles, rel);
    if (statSync(file).size !== e.size) return false;
    return sha256OfFile(file)?.sha256 === e.sha256;
  } catch {
    return false;
  }
}

/** Delivers one staged capture into `runDir`; see the module comment. */
export async function deliverOne(dir: string, runDir: string): Promise<DeliveryResult> {
  const s = readStaged(dir);
  const now = () => new Date().toISOString();
  // delivered before into this run, and the run still holds exactly that delivery: nothing to do
  const prior = existsSync(path.join(runDir, 'manifest.json')) ? priorManifest(runDir, s.capture_key) : null;
  if (s.delivery.status === 'delivered' && s.delivery.run_dir === path.resolve(runDir) && prior?.source?.staged_at === s.source.staged_at && stillInRun(captureFilesDir(runDir, s.capture_key), s)) {
    return result(dir, s, prior);
  }
  s.delivery.attempts++;
  s.delivery.last_attempt_at = now();
  s.delivery.run_dir = path.resolve(runDir);
  try {
    runIdOf(runDir);
  } catch (e) {
    s.delivery.status = 'failed';
    s.delivery.last_error = (e as Error).message;
    foldInto(dir, s);
    return { ...result(dir, s, null), error: s.delivery.last_error };
  }
  return withCaptureLock(runDir, s.capture_key, () => deliverFiles(dir, runDir, s));
}

/** The locked part of `deliverOne`: copy what is not confirmed, then publish. */
async function deliverFiles(dir: string, runDir: string, s: StagedCapture): Promise<DeliveryResult> {
  const now = () => new Date().toISOString();
  const prior = priorManifest(runDir, s.capture_key); // read again under the lock
  const runFiles = captureFilesDir(runDir, s.capture_key);
  const entries = new Map(s.collection.entries.map((e) => [e.path, e]));
  const finished = finishedCaptureOf(runDir, s.trial);
  if (finished !== null) {
    s.delivery.status = 'failed';
    s.delivery.last_error = `obsolete: the run holds the finished capture of this trial (${finished}); this staged copy was taken before it finished and can be removed`;
    foldInto(dir, s);
    return { ...result(dir, s, null), error: s.delivery.last_error };
  }
  // an earlier journal (a killed delivery) is already applied to `s`: fold it, start afresh
  if (existsSync(journalPath(dir))) foldInto(dir, s);
  // the capture stops being listed before anything of it changes; then the files an earlier
  // capture of this trial holds and this one does not are removed
  beginCapture(runDir, s.capture_key);
  removeStale(runDir, s.capture_key, prior, new Set(Object.keys(s.delivery.files)));
  mkdirSync(runFiles, { recursive: true });
  const journal = await DeliveryJournal.create(dir, { capture_key: s.capture_key, staged_at: s.source.staged_at });
  journal.add({ attempt: s.delivery.attempts, at: s.delivery.last_attempt_at ?? now(), run_dir: s.delivery.run_dir ?? path.resolve(runDir) });
  const dirs = new DestinationDirs(runFiles);
  const stagedFiles = path.join(dir, FILES_DIR);
  const confirm = new Confirmations(runFiles, journal);
  await mapConcurrent(Object.entries(s.delivery.files), COPY_CONCURRENCY, async ([rel, f]) => {
    const e = entries.get(rel);
    if (!e) return;
    if (f.status === 'delivered' && alreadyInRun(runFiles, rel, e)) return;
    f.attempts++;
    f.status = 'pending'; // until its batch is durable (Confirmations)
    try {
      await copyVerified(stagedFiles, runFiles, rel, { expectSha256: e.sha256 ?? '', dirs, deferSync: true });
      confirm.copied(rel, f, now());
    } catch (err) {
      f.status = 'failed';
      f.last_error = (err as Error).message;
      s.delivery.last_error = `${rel}: ${f.last_error}`;
      journal.add({ file: rel, status: f.status, attempts: f.attempts, last_error: f.last_error, delivered_at: null });
    }
  });
  try {
    await confirm.finish();
    await journal.close();
  } catch (err) {
    // the confirmations are not on disk: none may count; the record says why
    s.delivery.status = 'failed';
    s.delivery.last_error = `recording confirmations in ${journal.file}: ${(err as Error).message}`;
    for (const f of Object.values(s.delivery.files)) if (f.status === 'delivered') f.status = 'pending';
    foldInto(dir, s);
    return { ...result(dir, s, null), error: s.delivery.last_error };
  }
  const left = Object.values(s.delivery.files).filter((f) => f.status !== 'delivered').length;
  let manifest: CaptureManifest | null = null;
  if (left === 0) {
    try {
      pruneTo(runFiles, new Set(Object.keys(s.delivery.files)));
      supersedeUnfinished(runDir, s.capture_key, s.trial, path.basename(s.source.trial_dir));
      manifest = finishCapture(runDir, {
        key: s.capture_key,
        step: s.step,
        sampleId: s.sample_id,
        groupId: s.group_id,
        context: s.source.context,
        trialDir: s.source.trial_dir,
        stagedAt: s.source.staged_at,
        info: s.trial,
        entries: s.collection.entries,
        maxSpans: s.max_spans,
      });
      s.delivery.status = 'delivered';
      s.delivery.delivered_at = now();
      s.delivery.last_error = null;
    } catch (err) {
      s.delivery.status = 'failed';
      s.delivery.last_error = `publishing the capture: ${(err as Error).message}`;
    }
  } else {
    s.delivery.status = 'failed';
    const lastError = s.delivery.last_error ?? Object.entries(s.delivery.files).map(([rel, f]) => (f.last_error === null ? null : `${rel}: ${f.last_error}`)).find((x) => x !== null);
    s.delivery.last_error = `${left} of ${Object.keys(s.delivery.files).length} files not confirmed; last error: ${lastError ?? 'none recorded'}`;
  }
  foldInto(dir, s);
  return result(dir, s, manifest);
}

const CONFIRM_FILES = 2000;
const CONFIRM_MS = 100;

/**
 * Confirming copied files in batches: a file counts as delivered — in memory, and by its
 * journal line — only once the batch holding it is durable (durable-batch.ts: one syncfs for
 * the batch instead of an fsync per file). A batch closes at CONFIRM_FILES files or
 * CONFIRM_MS after it opened, so a kill loses at most that much confirmed progress.
 */
class Confirmations {
  private batch: { rel: string; f: FileDelivery; at: string }[] = [];
  private timer: NodeJS.Timeout | null = null;
  private committing: Promise<void> = Promise.resolve();

  constructor(
    private readonly runFiles: string,
    private readonly journal: DeliveryJournal,
  ) {}

  copied(rel: string, f: FileDelivery, at: string): void {
    this.batch.push({ rel, f, at });
    // a failed commit marks its files failed; a journal that cannot be written is finish()'s to throw
    if (this.batch.length >= CONFIRM_FILES) this.commit().catch(() => {});
    else this.timer ??= setTimeout(() => this.commit().catch(() => {}), CONFIRM_MS);
  }

  /** Commits what is left; rejects when the journal cannot be written (files that cannot be made durable are marked failed). */
  finish(): Promise<void> {
    return this.commit();
  }

  private commit(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.batch;
    this.batch = [];
    this.committing = this.committing.then(async () => {
      if (batch.length === 0) return;
      let error: string | null = null;
      try {
        await commitFiles(this.runFiles, batch.map((b) => hostPath(this.runFiles, b.rel)));
      } catch (e) {
        error = `copied but not made durable: ${(e as Error).message}`;
      }
      for (const { rel, f, at } of batch) {
        f.status = error === null ? 'delivered' : 'failed';
        f.last_error = error;
        f.delivered_at = error === null ? at : null;
        this.journal.add({ file: rel, status: f.status, attempts: f.attempts, last_error: f.last_error, delivered_at: f.delivered_at });
      }
      await this.journal.flush();
    });
    return this.committing;
  }
}

/** Writes the record (with every confirmation in it), then removes the journal it folds. */
function foldInto(dir: string, s: StagedCapture): void {
  writeStaged(dir, s);
  removeJournal(dir);
}

function result(dir: string, s: StagedCapture, manifest: CaptureManifest | null): DeliveryResult {
  const files = Object.entries(s.delivery.files);
  return {
    dir,
    key: s.capture_key,
    status: s.delivery.status,
    delivered: files.filter(([, f]) => f.status === 'delivered').length,
    unconfirmed: files.filter(([, f]) => f.status !== 'delivered').map(([p, f]) => ({ path: p, status: f.status, attempts: f.attempts, last_error: f.last_error })),
    manifest,
  };
}

/** Delivers every staged capture in `stagingDir` (one, or a spool of them) into `runDir`. */
export async function deliverStaged(stagingDir: string, options: { run: string }): Promise<DeliveryResult[]> {
  if (typeof options?.run !== 'string' || options.run === '') {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid deliver option run: expected a run directory (got ${JSON.stringify(options?.run)})`);
  }
  const dirs = stagedDirs(stagingDir);
  // one staged trial: its record's problem is the caller's error
  if (dirs.length === 1 && dirs[0] === stagingDir) return [await deliverOne(dirs[0], options.run)];
  const out: DeliveryResult[] = [];
  for (const d of dirs) {
    try {
      out.push(await deliverOne(d, options.run));
    } catch (e) {
      // one bad record must not stop the rest of a spool
      out.push({ dir: d, key: path.basename(d), status: 'failed', delivered: 0, unconfirmed: [], manifest: null, error: (e as Error).message });
    }
  }
  return out;
}

export interface StagingStatus {
  dir: string;
  staged: StagedCapture;
}

export function stagingStatus(stagingDir: string): StagingStatus[] {
  return stagedDirs(stagingDir).map((dir) => ({ dir, staged: readStaged(dir) }));
}
