/**
 * Where captures live inside a run: `trials/<capture key>/` with `capture.json`, `files/`,
 * `spans.parquet` and, for a ledger too long to list in the manifest, `ledger.jsonl`. Only
 * this module writes there.
 */
import { lstatSync, rmdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';

import { native, RlprobeError } from '../errors.js';
import { readRegularFile } from '../files/regular-file.js';
import { writeCaptureSpans } from '../native.js';
import { captureDir, captureFilesDir, captureKeys, readCaptureManifest } from './capture-files.js';
import { captureKeyOf, trialIdentity } from './capture-key.js';
import { DEFAULT_MAX_SPANS } from './capture-options.js';
import { captureSpanRows, encodeRows, rolloutSpanId, trialStepNames } from './capture-spans.js';
import { makeLedger } from './ledger.js';
import type { LedgerEntry } from './ledger.js';
import { allLedgerEntries, LEDGER_FILE, writeLedgerFile } from './ledger-file.js';
import { CAPTURE_FILE, CAPTURE_FORMAT_VERSION } from './manifest.js';
import type { CaptureManifest } from './manifest.js';
import { hostPath, isCleanRelative } from './safe-path.js';
import { cutSpans, planTrajectories } from './trajectories.js';
import type { TrialInfo } from './trial-info.js';
import { writeDurable } from './verified-copy.js';

export { TRIALS_DIR, captureDir, captureFilesDir, captureKeys, readCaptureManifest } from './capture-files.js';

/** The run id from `manifest.json`; throws RLPROBE_NOT_A_RUN when there is none. */
export function runIdOf(runDir: string): string {
  const file = path.join(runDir, 'manifest.json');
  const text = readRegularFile(file, 'RLPROBE_BAD_MANIFEST', 'restore the run\'s manifest.json');
  if (text === null) throw new RlprobeError('RLPROBE_NOT_A_RUN', `not a run directory (no manifest.json): ${runDir}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: ${(e as Error).message}`);
  }
  const id = (raw as { run_id?: unknown } | null)?.run_id;
  if (typeof id !== 'string' || id === '') throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: run_id: expected a non-empty string`);
  return id;
}

/** Marks a capture unfinished while it is rewritten: readers list only captures with a manifest. */
export function beginCapture(runDir: string, key: string): void {
  rmSync(path.join(captureDir(runDir, key), CAPTURE_FILE), { force: true });
}

export interface CaptureFacts {
  key: string;
  step: number;
  sampleId: string | null;
  groupId: string | null;
  context: Record<string, string>;
  trialDir: string;
  stagedAt: string | null;
  info: TrialInfo;
  /** Every ledger entry (not only those a manifest lists). */
  entries: LedgerEntry[];
  /** Spans written at most (default DEFAULT_MAX_SPANS). */
  maxSpans?: number;
}

export function labelsOf(sampleId: string | null, groupId: string | null): Record<string, string> {
  const labels: Record<string, string> = {};
  if (sampleId !== null) labels.sample = sampleId;
  if (groupId !== null) labels.group = groupId;
  return labels;
}

/**
 * Completes a capture whose files are in place: plans the trajectories from the run's copy
 * (cut to the span limit), replaces the capture's span file, writes the full ledger when the
 * manifest cannot list it, then writes `capture.json` (last: it is what makes the capture
 * visible). `chosen` names the trajectory files to expand (default: one per agent
 * directory, see `trajectoryFiles`).
 */
export function finishCapture(runDir: string, facts: CaptureFacts, chosen?: readonly string[]): CaptureManifest {
  const runId = runIdOf(runDir);
  const filesRoot = captureFilesDir(runDir, facts.key);
  // the rollout and one trial_step span per step are always written; the rest share the limit
  const limit = facts.maxSpans ?? DEFAULT_MAX_SPANS;
  const trajectories = planTrajectories(filesRoot, facts.entries, chosen, limit - 1 - facts.info.steps.length);
  const cut = cutSpans(trajectories, limit - 1 - trialStepNames(facts.info, trajectories).length, limit);
  const referenced = new Set(trajectories.flatMap((t) => [t.record.path, ...t.record.referenced_files]));
  const entries = facts.entries.map((e) => (referenced.has(e.path) && e.role !== 'trajectory' ? { ...e, role: 'trajectory' as const } : e));
  const labels = labelsOf(facts.sampleId, facts.groupId);
  const rows = captureSpanRows({
    runId,
    key: facts.key,
    step: facts.step,
    sampleId: facts.sampleId,
    groupId: facts.groupId,
    labels,
    info: facts.info,
    trajectories,
    filesRoot,
    now: Date.now() / 1000,
    context: facts.context,
    spansCut: cut,
  });
  const encoded = encodeRows(rows);
  native(() => writeCaptureSpans(runDir, facts.key, encoded.bytes));
  const ledger = makeLedger(entries, LEDGER_FILE);
  writeLedgerFile(captureDir(runDir, facts.key), ledger, entries);
  const manifest: CaptureManifest = {
    kind: 'harbor_trial',
    format_version: CAPTURE_FORMAT_VERSION,
    capture_key: facts.key,
    step: facts.step,
    captured_at: new Date().toISOString(),
    sample_id: facts.sampleId,
    group_id: facts.groupId,
    labels,
    source: { trial_dir: facts.trialDir, host: hostname(), context: facts.context, staged_at: facts.stagedAt },
    trial: facts.info,
    trajectories: trajectories.map((t) => t.record),
    spans: { rollout_span_id: rolloutSpanId(runId, facts.key), count: encoded.count, by_kind: encoded.byKind, cut, limit },
    ledger,
  };
  writeDurable(path.join(captureDir(runDir, facts.key), CAPTURE_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/**
 * A trial captured before it finished is keyed by its directory name (it had no result id
 * yet). Once it has finished and is captured under its result id, that earlier capture is
 * the same trial, unfinished: remove it, or the run would hold two rollouts for one trial,
 * one of them open for ever. Only a capture with no trial id, taken from a directory of the
 * same name, is removed.
 */
export function supersedeUnfinished(runDir: string, key: string, info: TrialInfo, dirName: string): void {
  if (info.id === null) return;
  const provisional = captureKeyOf(info.name, trialIdentity(null, dirName));
  if (provisional === key) return;
  const dir = captureDir(runDir, provisional);
  let m: CaptureManifest;
  try {
    m = readCaptureManifest(runDir, provisional);
  } catch {
    return;
  }
  // the key already encodes name and directory; a Harbor trial name is unique to its trial
  if (m.trial?.id !== null || m.trial?.name !== info.name) return;
  rmSync(dir, { recursive: true, force: true });
}

/**
 * For a trial without a result id (unfinished): the key of a finished capture of the same
 * trial already in the run, if any. Publishing the unfinished one beside it would give the
 * trial a second rollout, open for ever.
 */
export function finishedCaptureOf(runDir: string, info: TrialInfo): string | null {
  if (info.id !== null) return null;
  for (const key of captureKeys(runDir).finished) {
    const m = priorManifest(runDir, key);
    if (m !== null && m.trial?.id !== null && m.trial?.name === info.name) return key;
  }
  return null;
}

/** The manifest of a finished capture of `key`, or null (none, or unreadable). */
export function priorManifest(runDir: string, key: string): CaptureManifest | null {
  try {
    return readCaptureManifest(runDir, key);
  } catch {
    return null;
  }
}

/** True when every directory of `rel` under `root` is a real directory (no link on the way). */
function plainDirsTo(root: string, rel: string): boolean {
  const parts = rel.split('/');
  let at = root;
  for (const p of parts.slice(0, -1)) {
    at = path.join(at, p);
    try {
      if (!lstatSync(at).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Removes the files an earlier capture (`prior`, read before `beginCapture`) listed as
 * collected that `keep` does not hold, and the directories that leaves empty, so a path
 * that changed between file and directory does not block the copy. Only paths the manifest
 * names are touched, and never through a link: a linked directory on the way is left alone.
 */
export function removeStale(runDir: string, key: string, prior: CaptureManifest | null, keep: ReadonlySet<string>): void {
  const root = captureFilesDir(runDir, key);
  if (!prior?.ledger) return;
  for (const e of priorEntries(runDir, key, prior)) {
    if (e.status !== 'collected' || keep.has(e.path) || !isCleanRelative(e.path) || !plainDirsTo(root, e.path)) continue;
    try {
      if (lstatSync(hostPath(root, e.path)).isDirectory()) continue;
    } catch {
      continue;
    }
    rmSync(hostPath(root, e.path), { force: true }); // a file, or a link itself (not its target)
    for (let dir = path.posix.dirname(e.path); dir !== '.'; dir = path.posix.dirname(dir)) {
      try {
        rmdirSync(hostPath(root, dir));
      } catch {
        break;
      }
    }
  }
}

/**
 * Every entry of an earlier capture's ledger. Its full list lost or damaged, the entries its
 * manifest lists: what this misses, the prune after the copy removes (pruneTo).
 */
function priorEntries(runDir: string, key: string, prior: CaptureManifest): LedgerEntry[] {
  try {
    return [...allLedgerEntries(captureDir(runDir, key), prior.ledger)];
  } catch {
    return Array.isArray(prior.ledger.entries) ? prior.ledger.entries : [];
  }
}
