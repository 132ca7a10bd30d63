/**
 * Trial-relative paths. Everything a trial declares (artifact manifests, the trial config,
 * trajectory references) is a path we did not choose, so it is resolved against the trial
 * root and refused when it could lead anywhere else: absolute paths, drive letters, `..`
 * segments, NUL bytes. Paths inside a capture are POSIX, whatever the host.
 */
import path from 'node:path';

export type SafePath = { ok: true; path: string } | { ok: false; reason: string };

/** `p` made trial-relative and normalised (`./a//b` → `a/b`), or why it is refused. */
export function safeRelative(p: string, base = ''): SafePath {
  if (typeof p !== 'string' || p.length === 0) return { ok: false, reason: 'empty path' };
  if (p.includes('\u0000')) return { ok: false, reason: `refused ${JSON.stringify(p)}: contains a NUL byte` };
  const slashed = p.replace(/\\/g, '/');
  if (slashed.startsWith('/') || /^[A-Za-z]:\//.test(slashed) || slashed.startsWith('//')) {
    return { ok: false, reason: `refused ${JSON.stringify(p)}: an absolute path` };
  }
  const parts: string[] = base === '' ? [] : base.split('/');
  for (const seg of slashed.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (parts.length === 0) return { ok: false, reason: `refused ${JSON.stringify(p)}: escapes the trial directory` };
      parts.pop();
      continue;
    }
    parts.push(seg);
  }
  if (parts.length === 0) return { ok: false, reason: `refused ${JSON.stringify(p)}: names the trial directory itself` };
  return { ok: true, path: parts.join('/') };
}

/** The host path of trial-relative `rel` under `root` (rel already checked by safeRelative). */
export function hostPath(root: string, rel: string): string {
  return path.join(root, ...rel.split('/'));
}

/** True when `child` is `parent` or lies inside it (both absolute, resolved). */
export function isInside(parent: string, child: string): boolean {
  const r = path.relative(parent, child);
  return r === '' || (!r.startsWith('..') && !path.isAbsolute(r));
}

/** A capture key names one directory under `trials/` (the Rust writer checks the same). */
export function isCaptureKey(key: unknown): key is string {
  return typeof key === 'string' && key.length > 0 && key.length <= 200 && !key.startsWith('.') && /^[A-Za-z0-9._-]+$/.test(key);
}

/** True when `rel` is already a normalised trial-relative path (nothing to resolve). */
export function isCleanRelative(rel: unknown): rel is string {
  if (typeof rel !== 'string') return false;
  const safe = safeRelative(rel);
  return safe.ok && safe.path === rel;
}

/** Why a list of multi-step step names is unusable as directory names, or null. */
export function stepsProblem(steps: unknown): string | null {
  if (!Array.isArray(steps)) return 'trial.steps is not a list';
  // oxlint-disable-next-line no-control-regex -- NUL is exactly what a path segment must not hold
  const bad = steps.find((n) => typeof n !== 'string' || n === '' || n === '.' || n === '..' || /[/\\\u0000]/.test(n));
  return bad === undefined ? null : `trial.steps names ${JSON.stringify(bad)}, not a step directory name`;
}
