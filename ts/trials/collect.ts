/**
 * Collecting a trial: inventory its directory, read what it says about itself, derive its
 * capture key, and copy the collectable files somewhere (the run, or a staging directory),
 * each copy hashed and made durable. Shared by `capture` and `stage`.
 */
import { lstatSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { captureKeyOf, trialIdentity } from './capture-key.js';
import { TrialFileReader } from './file-reader.js';
import { addDeclarations, DEFAULT_MAX_FILE_BYTES, walkTrial } from './inventory.js';
import type { LedgerEntry } from './ledger.js';
import { roleOf } from './roles.js';
import { readTrialInfo } from './trial-info.js';
import type { TrialInfo } from './trial-info.js';
import { copyVerified, GrewPastLimit } from './verified-copy.js';

/** What identifies a trial directory as one: any of Harbor's fixed entries. */
const TRIAL_MARKERS = ['config.json', 'result.json', 'results.json', 'trial.log', 'agent', 'steps', 'verifier'];

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
  return root;
}

function unknownEntry(rel: string, reason: string): LedgerEntry {
  return { path: rel, role: roleOf(rel), status: 'unknown', size: null, sha256: null, reason, declared_by: [] };
}

export function collectTrial(trialDir: string, maxFileBytes = DEFAULT_MAX_FILE_BYTES): CollectedTrial {
  const root = resolveTrialDir(trialDir);
  const inv = walkTrial(root, maxFileBytes);
  const files = new TrialFileReader(root, new Set(inv.files.keys()));
  addDeclarations(files, inv);
  const stepNames = [...new Set([...inv.files.keys()].map((p) => /^steps\/([^/]+)\//.exec(p)?.[1]).filter((s): s is string => s !== undefined))].sort();
  const dirName = path.basename(root);
  const info = readTrialInfo(files, dirName, stepNames);
  const key = captureKeyOf(info.name, trialIdentity(info.id, dirName));
  const others = [...inv.others];
  const has = (p: string) => inv.files.has(p) || others.some((e) => e.path === p);
  // what the harness never put on the host: say so rather than imply it did not exist
  if (!info.finished && !has('result.json')) {
    others.push(unknownEntry('result.json', 'not written: the trial had not finished, or the harness stopped before writing its result'));
  }
  const verifierDirs = stepNames.length > 0 ? stepNames.map((s) => `steps/${s}/`) : [''];
  for (const prefix of verifierDirs) {
    const rewardFiles = [`${prefix}verifier/reward.json`, `${prefix}verifier/reward.txt`];
    const haveReward = rewardFiles.some(has) || (prefix === '' && info.reward_source === 'verifier_result.rewards');
    if (!haveReward) others.push(unknownEntry(`${prefix}verifier/reward.json`, 'no reward file: the verifier did not run, did not finish, or wrote its reward only inside the sandbox'));
  }
  return { root, info, key, files: [...inv.files.keys()].sort(), declaredBy: inv.declaredBy, others, maxFileBytes };
}

/**
 * Copies the collected files into `destRoot`, hashing each; a file that vanished or became
 * unreadable since the walk is listed as missing with the error.
 */
export async function copyCollected(trial: CollectedTrial, destRoot: string): Promise<LedgerEntry[]> {
  const entries: LedgerEntry[] = [...trial.others];
  for (const rel of trial.files) {
    const declared_by = trial.declaredBy.get(rel) ?? [];
    try {
      const { size, sha256 } = await copyVerified(trial.root, destRoot, rel, { maxBytes: trial.maxFileBytes });
      entries.push({ path: rel, role: roleOf(rel), status: 'collected', size, sha256, reason: null, declared_by });
    } catch (e) {
      // a file that changed under the walk: grown too large is a skip, gone or swapped is missing
      const status = e instanceof GrewPastLimit ? 'skipped' : 'missing';
      entries.push({ path: rel, role: roleOf(rel), status, size: null, sha256: null, reason: `could not be copied: ${(e as Error).message}`, declared_by });
    }
  }
  return entries;
}

const TEMP = /^\..+\.tmp-\d+-[0-9a-f]{8}$/;

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
      } else if (keep.has(childRel) && !TEMP.test(name)) kept = true;
      else rmSync(full, { force: true });
    }
    return kept;
  };
  walk(root, '');
}
