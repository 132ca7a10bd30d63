/**
 * Walks a trial directory and decides, for every entry, whether it is collected. Nothing is
 * followed or opened except regular files inside the trial directory: symbolic links and
 * hidden entries are listed as visible skips, special files are skipped, files over the
 * size limit are skipped with their size. Declared files (the artifacts manifests, the
 * trial config's `artifacts`) that are absent are listed as missing.
 */
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';

import { isPlainObject } from '../import/python-json.js';
import type { TrialFileReader } from './file-reader.js';
import type { LedgerEntry } from './ledger.js';
import { roleOf } from './roles.js';
import { safeRelative } from './safe-path.js';

export const DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024;
/** Entries a walk visits before it stops (a runaway trial directory). */
const MAX_ENTRIES = 200_000;
const MAX_DEPTH = 64;

export interface Inventory {
  /** Files to copy: trial-relative path → size on disk when walked. */
  files: Map<string, number>;
  /** Every other ledger entry (skipped, missing, refused). */
  others: LedgerEntry[];
  /** Declarations per collected path. */
  declaredBy: Map<string, string[]>;
}

function entry(rel: string, status: LedgerEntry['status'], reason: string | null, size: number | null = null, declared: string[] = []): LedgerEntry {
  return { path: rel, role: roleOf(rel), status, size, sha256: null, reason, declared_by: declared };
}

export function walkTrial(root: string, maxFileBytes = DEFAULT_MAX_FILE_BYTES): Inventory {
  const files = new Map<string, number>();
  const others: LedgerEntry[] = [];
  let visited = 0;
  const walk = (dir: string, rel: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch (e) {
      others.push(entry(rel || '.', 'skipped', `directory not readable: ${(e as Error).message}`));
      return;
    }
    for (const name of names) {
      const childRel = rel === '' ? name : `${rel}/${name}`;
      const full = path.join(dir, name);
      if (++visited > MAX_ENTRIES) {
        others.push(entry(childRel, 'skipped', `the walk stopped after ${MAX_ENTRIES} entries; this and later entries are not inventoried`));
        return;
      }
      let st;
      try {
        st = lstatSync(full);
      } catch (e) {
        others.push(entry(childRel, 'missing', `vanished while walking: ${(e as Error).message}`));
        continue;
      }
      if (st.isSymbolicLink()) {
        let target = '?';
        try {
          target = readlinkSync(full);
        } catch {
          /* the target is only shown */
        }
        others.push(entry(childRel, 'skipped', `symbolic link to ${JSON.stringify(target)}: never followed`));
        continue;
      }
      if (name.startsWith('.')) {
        others.push(entry(childRel, 'skipped', st.isDirectory() ? 'hidden directory: not entered' : 'hidden file', st.isDirectory() ? null : st.size));
        continue;
      }
      if (st.isDirectory()) {
        if (depth >= MAX_DEPTH) others.push(entry(childRel, 'skipped', `nested deeper than ${MAX_DEPTH} directories: not entered`));
        else walk(full, childRel, depth + 1);
        continue;
      }
      if (!st.isFile()) {
        others.push(entry(childRel, 'skipped', 'not a regular file (a pipe, socket or device): never opened'));
        continue;
      }
      if (st.size > maxFileBytes) {
        others.push(entry(childRel, 'skipped', `larger than the capture limit (${st.size} bytes > ${maxFileBytes})`, st.size));
        continue;
      }
      files.set(childRel, st.size);
    }
  };
  walk(root, '', 0);
  return { files, others, declaredBy: new Map() };
}

/** A declaration: the path it names (trial-relative, checked) and who declared it. */
interface Declared {
  path: string;
  by: string;
  kind: 'file' | 'directory' | 'unknown';
  /** The harness's own word on it (Harbor's manifest `status`), if any. */
  harnessStatus: string | null;
}

/**
 * Harbor's artifacts manifest: a list of `{source, destination, type, status, service}`.
 * `destination` is trial-relative (`artifacts/...`); older writers made it relative to the
 * artifacts directory, so a path without the prefix is taken inside it.
 */
function artifactManifestDeclarations(files: TrialFileReader, manifestRel: string, refused: LedgerEntry[]): Declared[] {
  const doc = files.json(manifestRel);
  const list = Array.isArray(doc) ? doc : isPlainObject(doc) && Array.isArray(doc.artifacts) ? doc.artifacts : [];
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
      refused.push({ path: dest, role: 'artifact', status: 'skipped', size: null, sha256: null, reason: `${safe.reason} (declared by ${manifestRel})`, declared_by: [manifestRel] });
      continue;
    }
    const kind = item.type === 'file' || item.type === 'directory' ? item.type : 'unknown';
    out.push({ path: safe.path, by: manifestRel, kind, harnessStatus: typeof item.status === 'string' ? item.status : null });
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
          refused.push({ path: item.destination, role: 'artifact', status: 'skipped', size: null, sha256: null, reason: `${safe.reason} (declared by config.json)`, declared_by: ['config.json'] });
          continue;
        }
        rel = safe.path;
      } else if (typeof item.source === 'string') rel = item.source.replace(/^[A-Za-z]:/, '').replace(/^\/+/, '');
    }
    if (rel === null || rel === '') continue;
    const safe = safeRelative(rel, 'artifacts');
    if (!safe.ok) {
      refused.push({ path: String(typeof item === 'string' ? item : rel), role: 'artifact', status: 'skipped', size: null, sha256: null, reason: `${safe.reason} (declared by config.json)`, declared_by: ['config.json'] });
      continue;
    }
    out.push({ path: safe.path, by: 'config.json', kind: 'unknown', harnessStatus: null });
  }
  return out;
}

/** `a/b/c` → [`a`, `a/b`]. */
function ancestors(rel: string): string[] {
  const parts = rel.split('/');
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** Adds the declared files to the inventory: absent ones as missing, present ones tagged. */
export function addDeclarations(files: TrialFileReader, inv: Inventory): void {
  const refused: LedgerEntry[] = [];
  const declared: Declared[] = [];
  const manifests = [...inv.files.keys()].filter((p) => /^(steps\/[^/]+\/)?artifacts\/manifest\.json$/.test(p));
  for (const m of manifests) declared.push(...artifactManifestDeclarations(files, m, refused));
  declared.push(...configDeclarations(files, refused));
  inv.others.push(...refused);
  const known = new Set(inv.others.map((e) => e.path));
  const missing = new Map<string, LedgerEntry>();
  for (const d of declared) {
    if (inv.files.has(d.path)) {
      const by = inv.declaredBy.get(d.path) ?? [];
      if (!by.includes(d.by)) by.push(d.by);
      inv.declaredBy.set(d.path, by);
      continue;
    }
    // a declared directory is present when any collected file lies under it
    const prefix = `${d.path}/`;
    if (d.kind !== 'file' && [...inv.files.keys()].some((p) => p.startsWith(prefix))) continue;
    if (known.has(d.path)) continue; // on disk but skipped (a symlink, hidden, too large)
    // under a skipped directory (a link, hidden): it may well be there, but was not entered
    const skippedAncestor = ancestors(d.path).find((a) => known.has(a));
    if (skippedAncestor !== undefined) {
      if (!missing.has(d.path)) {
        missing.set(d.path, { path: d.path, role: 'artifact', status: 'skipped', size: null, sha256: null, reason: `declared by ${d.by}; under ${skippedAncestor}, which is skipped (not entered)`, declared_by: [d.by] });
      }
      continue;
    }
    const prior = missing.get(d.path);
    if (prior) {
      if (!prior.declared_by.includes(d.by)) prior.declared_by.push(d.by);
      continue;
    }
    const harness = d.harnessStatus && d.harnessStatus !== 'ok' ? `; the harness recorded it as ${JSON.stringify(d.harnessStatus)}` : '';
    missing.set(d.path, { path: d.path, role: 'artifact', status: 'missing', size: null, sha256: null, reason: `declared by ${d.by} but not in the trial directory${harness}`, declared_by: [d.by] });
  }
  inv.others.push(...missing.values());
}
