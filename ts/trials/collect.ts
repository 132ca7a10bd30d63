/**
 * Collecting a trial: inventory its directory, read what it says about itself, derive its
 * capture key, and copy the collectable files somewhere (the run, or a staging directory),
 * each copy hashed and made durable. Shared by `capture` and `stage`.
 */
import { existsSync, lstatSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { captureKeyOf, trialIdentity } from './capture-key.js';
import { COPY_CONCURRENCY, mapConcurrent } from './concurrently.js';
import { commitFiles } from './durable-batch.js';
import { Findings } from './fact-reader.js';
import { TrialFileReader } from './file-reader.js';
import { addDeclarations, DEFAULT_MAX_FILE_BYTES, walkTrial } from './inventory.js';
import type { ExcludedDir } from './inventory.js';
import type { LedgerEntry, ReasonCode } from './ledger.js';
import { roleOf } from './roles.js';
import { hostPath } from './safe-path.js';
import { readTrialInfo } from './trial-info.js';
import type { TrialInfo } from './trial-info.js';
import { copyVerified, DestinationDirs, GrewPastLimit, TEMP_NAME } from './verified-copy.js';

/** What identifies a trial directory as one: any of Harbor's fixed entries. */
const TRIAL_MARKERS = ['config.json', 'result.json', 'results.json', 'trial.log', 'agent', 'steps', 'verifier'];
/** Entries only a trial directory has (a job directory has its config and result too). */
const TRIAL_OWN = ['agent', 'verifier', 'steps', 'trial.log'];

export interface CollectedTrial {
  root: string;
  info: TrialInfo;
  key: string;
  /** Files to copy, trial-relative, in path order. */
  files: string[];
  declaredBy: Map<string, string[]>;
  /** Ledger entries for everything not copied (skipped, missing, unknown). */
  others: LedgerEntry[];
  maxFileBytes: number;
}

export function resolveTrialDir(trialDir: string): string {
  let root: string;
  try {
    root = realpathSync(trialDir);
  } catch {
    throw new RlprobeError('RLPROBE_NOT_A_TRIAL', `not a trial directory (it does not exist): ${trialDir}`);
  }
  if (!statSync(root).isDirectory()) throw new RlprobeError('RLPROBE_NOT_A_TRIAL', `not a trial directory (not a directory): ${trialDir}`);
  const names = new Set(readdirSync(root));
  if (!TRIAL_MARKERS.some((m) => names.has(m))) {
    throw new RlprobeError('RLPROBE_NOT_A_TRIAL', `not a Harbor trial directory (none of ${TRIAL_MARKERS.join(', ')}): ${trialDir}`);
  }
  refuseJob(trialDir, root, names);
  return root;
}

/** True when `dir` looks like a trial directory: its config or result beside a trial's own entries. */
function looksLikeTrial(dir: string): boolean {
  let names: Set<string>;
  try {
    if (!lstatSync(dir).isDirectory()) return false;
    names = new Set(readdirSync(dir));
  } catch {
    return false;
  }
  return (names.has('config.json') || names.has('result.json')) && TRIAL_OWN.some((m) => names.has(m));
}

/**
 * A Harbor job directory (`jobs/<job>/`) has a config and a result of its own, so it passes
 * for a trial at a glance; capturing it would copy every trial into one capture keyed as a
 * single trial. It has none of a trial's own entries and holds trial directories: refused,
 * naming them.
 */
function refuseJob(trialDir: string, root: string, names: ReadonlySet<string>): void {
  if (TRIAL_OWN.some((m) => names.has(m))) return;
  const trials = [...names].filter((n) => !n.startsWith('.') && looksLikeTrial(path.join(root, n))).sort();
  if (trials.length === 0) return;
  const shown = trials.length > 5 ? `${trials.slice(0, 5).join(', ')}, …` : trials.join(', ');
  throw new RlprobeError(
    'RLPROBE_NOT_A_TRIAL',
    `${trialDir} is a Harbor job directory, not a trial: it holds ${trials.length} trial ${trials.length === 1 ? 'directory' : 'directories'} (${shown}); ` +
      `capture each of them, e.g. probe trial capture ${path.join(trialDir, trials[0])}`,
  );
}

function unknownEntry(rel: string, code: ReasonCode, reason: string): LedgerEntry {
  return { path: rel, role: roleOf(rel), status: 'unknown', size: null, sha256: null, reason, reason_code: code, declared_by: [] };
}

/**
 * The directory a capture writes into, when it lies inside the trial directory (a run or a
 * staging directory made there): the walk must not enter it, or the capture would copy
 * itself. `what` says which (`the run directory this capture writes into`).
 */
export function outputInside(dir: string, what: string): ExcludedDir[] {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    // not made yet: its parent decides where it will be
    const parent = path.dirname(path.resolve(dir));
    if (!existsSync(parent)) return [];
    real = path.join(realpathSync(parent), path.basename(dir));
  }
  return [{ path: real, what }];
}

export function collectTrial(trialDir: string, maxFileBytes = DEFAULT_MAX_FILE_BYTES, exclude: readonly ExcludedDir[] = []): CollectedTrial {
  const root = resolveTrialDir(trialDir);
  const itself = exclude.find((x) => x.path === root);
  if (itself !== undefined) throw new RlprobeError('RLPROBE_INVALID_OPTION', `${itself.what} is the trial directory itself (${trialDir}): write it outside the trial`);
  const inv = walkTrial(root, maxFileBytes, exclude);
  const files = new TrialFileReader(root, new Set(inv.files.keys()));
  const findings = new Findings();
  addDeclarations(files, inv, findings);
  const stepNames = [...new Set([...inv.files.keys()].map((p) => /^steps\/([^/]+)\//.exec(p)?.[1]).filter((s): s is string => s !== undefined))].sort();
  const dirName = path.basename(root);
  const info = readTrialInfo(files, dirName, stepNames, findings);
  const key = captureKeyOf(info.name, trialIdentity(info.id, dirName));
  const others = [...inv.others];
  const has = (p: string) => inv.files.has(p) || others.some((e) => e.path === p);
  // what the harness never put on the host: say so rather than imply it did not exist
  if (!info.finished && !has('result.json')) {
    others.push(unknownEntry('result.json', 'not_written', 'not written: the trial had not finished, or the harness stopped before writing its result'));
  }
  const verifierDirs = stepNames.length > 0 ? stepNames.map((s) => `steps/${s}/`) : [''];
  for (const prefix of verifierDirs) {
    const rewardFiles = [`${prefix}verifier/reward.json`, `${prefix}verifier/reward.txt`];
    const haveReward = rewardFiles.some(has) || (prefix === '' && info.reward_source === 'verifier_result.rewards');
    if (!haveReward) others.push(unknownEntry(`${prefix}verifier/reward.json`, 'no_reward', 'no reward file: the verifier did not run, did not finish, or wrote its reward only inside the sandbox'));
  }
  return { root, info, key, files: [...inv.files.keys()].sort(), declaredBy: inv.declaredBy, others, maxFileBytes };
}

/**
 * Copies the collected files into `destRoot` (a few at a time, see concurrently.ts), hashing
 * each, then makes them durable together (durable-batch.ts) before any counts as collected;
 * a file that vanished or became unreadable since the walk is listed as missing with the
 * error.
 */
export async function copyCollected(trial: CollectedTrial, destRoot: string): Promise<LedgerEntry[]> {
  const dirs = new DestinationDirs(destRoot);
  const copied = await mapConcurrent(trial.files, COPY_CONCURRENCY, async (rel): Promise<LedgerEntry> => {
    const declared_by = trial.declaredBy.get(rel) ?? [];
    try {
      const { size, sha256 } = await copyVerified(trial.root, destRoot, rel, { maxBytes: trial.maxFileBytes, dirs, deferSync: true });
      return { path: rel, role: roleOf(rel), status: 'collected', size, sha256, reason: null, reason_code: null, declared_by };
    } catch (e) {
      // a file that changed under the walk: grown too large is a skip, gone or swapped is missing
      const grew = e instanceof GrewPastLimit;
      return { path: rel, role: roleOf(rel), status: grew ? 'skipped' : 'missing', size: null, sha256: null, reason: `could not be copied: ${(e as Error).message}`, reason_code: grew ? 'grew_past_limit' : 'copy_failed', declared_by };
    }
  });
  const collected = copied.filter((e) => e.status === 'collected');
  try {
    await commitFiles(destRoot, collected.map((e) => hostPath(destRoot, e.path)));
  } catch (e) {
    // which copies reached the disk is unknown: none is claimed
    for (const c of collected) Object.assign(c, { status: 'missing', size: null, sha256: null, reason: `copied but not made durable: ${(e as Error).message}`, reason_code: 'copy_failed' });
  }
  return [...trial.others, ...copied];
}

/**
 * Removes what `root` holds beyond `keep` (files of an earlier capture of the same trial
 * that this one no longer has) and temporaries an interrupted copy left. Never follows a
 * symbolic link: one found here is removed as an entry, not entered.
 */
export function pruneTo(root: string, keep: ReadonlySet<string>): void {
  const walk = (dir: string, rel: string): boolean => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return false;
    }
    let kept = false;
    for (const name of names) {
      const childRel = rel === '' ? name : `${rel}/${name}`;
      const full = path.join(dir, name);
      const st = lstatSync(full);
      if (st.isDirectory()) {
        if (walk(full, childRel)) kept = true;
        else rmSync(full, { recursive: true, force: true });
      } else if (keep.has(childRel) && !TEMP_NAME.test(name)) kept = true;
      else rmSync(full, { force: true });
    }
    return kept;
  };
  walk(root, '');
}
