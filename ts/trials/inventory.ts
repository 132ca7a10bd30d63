/**
 * Walks a trial directory and decides, for every entry, whether it is collected. Nothing is
 * followed or opened except regular files inside the trial directory: symbolic links and
 * hidden entries are listed as visible skips, special files are skipped, files over the
 * size limit are skipped with their size, names that are not UTF-8 (a ledger path is a
 * JSON string) are skipped with their bytes, and a directory the capture itself writes
 * into (a run or staging directory inside the trial) is not entered. Declared files (the
 * artifacts manifests, the trial config's `artifacts`) that are absent are listed as
 * missing; a declared directory that exists but holds no file to collect, as empty.
 */
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';

import { isPlainObject } from '../files/python-json.js';
import { describeValue, FieldReader } from './fact-reader.js';
import type { Findings } from './fact-reader.js';
import type { TrialFileReader } from './file-reader.js';
import type { LedgerEntry, ReasonCode } from './ledger.js';
import { roleOf } from './roles.js';
import { safeRelative } from './safe-path.js';

export const DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024;
/** Entries a walk visits before it stops (a runaway trial directory). */
const MAX_ENTRIES = 200_000;
const MAX_DEPTH = 64;

/** A directory the walk must not enter, and what it is (`the run directory this capture writes into`). */
export interface ExcludedDir {
  /** Absolute real path. */
  path: string;
  what: string;
}

export interface Inventory {
  /** Files to copy: trial-relative path → size on disk when walked. */
  files: Map<string, number>;
  /** Every other ledger entry (skipped, missing, refused). */
  others: LedgerEntry[];
  /** Declarations per collected path. */
  declaredBy: Map<string, string[]>;
  /** Trial-relative paths of the directories walked into. */
  dirs: Set<string>;
}

function entry(rel: string, status: LedgerEntry['status'], code: ReasonCode, reason: string, size: number | null = null, declared: string[] = []): LedgerEntry {
  return { path: rel, role: roleOf(rel), status, size, sha256: null, reason, reason_code: code, declared_by: declared };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A name's text, or null when its bytes are not UTF-8. */
function nameText(name: Buffer): string | null {
  try {
    return utf8.decode(name);
  } catch {
    return null;
  }
}

/** A non-UTF-8 name shown with its undecodable bytes as `\xNN` (the reason lists every byte). */
function escapedName(name: Buffer): string {
  let out = '';
  for (const b of name) out += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  return out;
}

export function walkTrial(root: string, maxFileBytes = DEFAULT_MAX_FILE_BYTES, exclude: readonly ExcludedDir[] = []): Inventory {
  const files = new Map<string, number>();
  const others: LedgerEntry[] = [];
  const dirs = new Set<string>();
  let visited = 0;
  const walk = (dir: string, rel: string, depth: number) => {
    let names: Buffer[];
    try {
      names = readdirSync(dir, { encoding: 'buffer' }).sort(Buffer.compare);
    } catch (e) {
      others.push(entry(rel || '.', 'skipped', 'unreadable_directory', `directory not readable: ${(e as Error).message}`));
      return;
    }
    if (rel !== '') dirs.add(rel);
    for (const raw of names) {
      const name = nameText(raw);
      const shown = name ?? escapedName(raw);
      const childRel = rel === '' ? shown : `${rel}/${shown}`;
      if (++visited > MAX_ENTRIES) {
        others.push(entry(childRel, 'skipped', 'walk_limit', `the walk stopped after ${MAX_ENTRIES} entries; this and later entries are not inventoried`));
        return;
      }
      let st;
      try {
        st = lstatSync(name !== null ? path.join(dir, name) : Buffer.concat([Buffer.from(`${dir}${path.sep}`), raw]));
      } catch (e) {
        others.push(entry(childRel, 'missing', 'vanished', `vanished while walking: ${(e as Error).message}`));
        continue;
      }
      if (name === null) {
        const bytes = [...raw].map((b) => b.toString(16).padStart(2, '0')).join(' ');
        const what = st.isDirectory() ? 'not entered' : 'not copied';
        others.push(entry(childRel, 'skipped', 'name_not_utf8', `name is not valid UTF-8 (bytes ${bytes}): not representable in the ledger; ${what}`, st.isFile() ? st.size : null));
        continue;
      }
      const full = path.join(dir, name);
      if (st.isSymbolicLink()) {
        let target = '?';
        try {
          target = readlinkSync(full);
        } catch {
          /* the target is only shown */
        }
        others.push(entry(childRel, 'skipped', 'symlink', `symbolic link to ${JSON.stringify(target)}: never followed`));
        continue;
      }
      if (name.startsWith('.')) {
        others.push(entry(childRel, 'skipped', 'hidden', st.isDirectory() ? 'hidden directory: not entered' : 'hidden file', st.isDirectory() ? null : st.size));
        continue;
      }
      if (st.isDirectory()) {
        const excluded = exclude.find((x) => x.path === full);
        if (excluded !== undefined) others.push(entry(childRel, 'skipped', 'output_directory', `${excluded.what}: not entered`));
        else if (depth >= MAX_DEPTH) others.push(entry(childRel, 'skipped', 'too_deep', `nested deeper than ${MAX_DEPTH} directories: not entered`));
        else walk(full, childRel, depth + 1);
        continue;
      }
      if (!st.isFile()) {
        others.push(entry(childRel, 'skipped', 'special_file', 'not a regular file (a pipe, socket or device): never opened'));
        continue;
      }
      if (st.size > maxFileBytes) {
        others.push(entry(childRel, 'skipped', 'too_large', `larger than the capture limit (${st.size} bytes > ${maxFileBytes})`, st.size));
        continue;
      }
      files.set(childRel, st.size);
    }
  };
  walk(root, '', 0);
  return { files, others, declaredBy: new Map(), dirs };
}

/** A declaration: the path it names (trial-relative, checked) and who declared it. */
interface Declared {
  path: string;
  by: string;
  /** The harness's own word on it (Harbor's manifest `status`), if any. */
  harnessStatus: string | null;
}

function refusedDeclaration(declared: string, reason: string, by: string): LedgerEntry {
  return { path: declared, role: 'artifact', status: 'skipped', size: null, sha256: null, reason: `${reason} (declared by ${by})`, reason_code: 'declared_escape', declared_by: [by] };
}

/**
 * Harbor's artifacts manifest: a list of `{source, destination, type, status, service}`.
 * `destination` is trial-relative (`artifacts/...`); older writers made it relative to the
 * artifacts directory, so a path without the prefix is taken inside it.
 */
function artifactManifestDeclarations(files: TrialFileReader, manifestRel: string, refused: LedgerEntry[], findings: Findings): Declared[] {
  const read = files.document(manifestRel);
  const fields = new FieldReader(manifestRel, findings);
  if (read === null) return [];
  if ('problem' in read) {
    fields.note(`${read.problem}; its declarations are not checked`);
    return [];
  }
  const doc = read.value;
  const list = Array.isArray(doc) ? doc : isPlainObject(doc) && Array.isArray(doc.artifacts) ? doc.artifacts : null;
  if (list === null) {
    fields.note(`the document is ${describeValue(doc)}, expected a list of artifacts; its declarations are not checked`);
    return [];
  }
  const artifactsDir = manifestRel.slice(0, -'/manifest.json'.length);
  const stepPrefix = artifactsDir.slice(0, -'artifacts'.length);
  const out: Declared[] = [];
  for (const item of list) {
    if (!isPlainObject(item)) continue;
    const dest = typeof item.destination === 'string' ? item.destination : typeof item.path === 'string' ? item.path : null;
    if (dest === null) continue;
    const slashed = dest.replace(/\\/g, '/');
    const base = slashed.startsWith('artifacts/') ? stepPrefix.replace(/\/$/, '') : artifactsDir;
    const safe = safeRelative(dest, base);
    if (!safe.ok) {
      refused.push(refusedDeclaration(dest, safe.reason, manifestRel));
      continue;
    }
    out.push({ path: safe.path, by: manifestRel, harnessStatus: typeof item.status === 'string' ? item.status : null });
  }
  return out;
}

/**
 * The trial config's `artifacts`: container paths (`/out/x.json`, mirrored under
 * `artifacts/` on the host) or `{source, destination}`. A destination is host-side and must
 * stay inside the trial's artifacts directory.
 */
function configDeclarations(files: TrialFileReader, refused: LedgerEntry[]): Declared[] {
  const doc = files.json('config.json');
  if (!isPlainObject(doc) || !Array.isArray(doc.artifacts)) return [];
  const out: Declared[] = [];
  for (const item of doc.artifacts) {
    let rel: string | null = null;
    if (typeof item === 'string') rel = item.replace(/^[A-Za-z]:/, '').replace(/^\/+/, '');
    else if (isPlainObject(item)) {
      if (typeof item.destination === 'string') {
        const safe = safeRelative(item.destination);
        if (!safe.ok) {
          refused.push(refusedDeclaration(item.destination, safe.reason, 'config.json'));
          continue;
        }
        rel = safe.path;
      } else if (typeof item.source === 'string') rel = item.source.replace(/^[A-Za-z]:/, '').replace(/^\/+/, '');
    }
    if (rel === null || rel === '') continue;
    const safe = safeRelative(rel, 'artifacts');
    if (!safe.ok) {
      refused.push(refusedDeclaration(String(typeof item === 'string' ? item : rel), safe.reason, 'config.json'));
      continue;
    }
    out.push({ path: safe.path, by: 'config.json', harnessStatus: null });
  }
  return out;
}

/** `a/b/c` → [`a`, `a/b`]. */
function ancestors(rel: string): string[] {
  const parts = rel.split('/');
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

/**
 * Adds the declared files to the inventory: absent ones as missing, empty directories as
 * empty, present ones tagged. An artifacts manifest that cannot be read is a warning in
 * `findings` (its declarations cannot be checked).
 */
export function addDeclarations(files: TrialFileReader, inv: Inventory, findings: Findings): void {
  const refused: LedgerEntry[] = [];
  const declared: Declared[] = [];
  const manifests = [...inv.files.keys()].filter((p) => /^(steps\/[^/]+\/)?artifacts\/manifest\.json$/.test(p));
  for (const m of manifests) declared.push(...artifactManifestDeclarations(files, m, refused, findings));
  declared.push(...configDeclarations(files, refused));
  inv.others.push(...refused);
  const known = new Set(inv.others.map((e) => e.path));
  const holdingFiles = new Set([...inv.files.keys()].flatMap(ancestors));
  const reported = new Map<string, LedgerEntry>();
  const report = (d: Declared, e: LedgerEntry) => {
    const prior = reported.get(d.path);
    if (prior === undefined) reported.set(d.path, e);
    else if (!prior.declared_by.includes(d.by)) prior.declared_by.push(d.by);
  };
  for (const d of declared) {
    if (inv.files.has(d.path)) {
      const by = inv.declaredBy.get(d.path) ?? [];
      if (!by.includes(d.by)) by.push(d.by);
      inv.declaredBy.set(d.path, by);
      continue;
    }
    // a declared directory is present when any collected file lies under it
    if (holdingFiles.has(d.path)) continue;
    if (known.has(d.path)) continue; // on disk but skipped (a symlink, hidden, too large)
    if (inv.dirs.has(d.path)) {
      // there, but nothing in it to collect: say so, and what is in it
      const skipped = inv.others.filter((e) => e.path.startsWith(`${d.path}/`)).length;
      const holds = skipped === 0 ? 'holds no files' : `holds no collectable file (${skipped} skipped ${skipped === 1 ? 'entry' : 'entries'} under it)`;
      report(d, { path: d.path, role: 'artifact', status: 'empty', size: null, sha256: null, reason: `declared by ${d.by}; the directory exists but ${holds}`, reason_code: 'declared_empty', declared_by: [d.by] });
      continue;
    }
    // under a skipped directory (a link, hidden): it may well be there, but was not entered
    const skippedAncestor = ancestors(d.path).find((a) => known.has(a));
    if (skippedAncestor !== undefined) {
      report(d, { path: d.path, role: 'artifact', status: 'skipped', size: null, sha256: null, reason: `declared by ${d.by}; under ${skippedAncestor}, which is skipped (not entered)`, reason_code: 'declared_under_skipped', declared_by: [d.by] });
      continue;
    }
    const harness = d.harnessStatus && d.harnessStatus !== 'ok' ? `; the harness recorded it as ${JSON.stringify(d.harnessStatus)}` : '';
    report(d, { path: d.path, role: 'artifact', status: 'missing', size: null, sha256: null, reason: `declared by ${d.by} but not in the trial directory${harness}`, reason_code: 'declared_absent', declared_by: [d.by] });
  }
  inv.others.push(...reported.values());
}
