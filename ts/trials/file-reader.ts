/**
 * Reading a trial's own files (result, config, rewards, manifests) as data. Only files the
 * walk found to be regular are read — a name that is a symbolic link, or lies under a
 * linked directory, was never walked into and is not in the set — and each is opened by
 * `openInside`, so a file or directory swapped for a link after the walk is refused too.
 */
import { closeSync, readSync } from 'node:fs';

import { isPlainObject, parsePythonJson } from '../import/python-json.js';
import { openInside } from './open-inside.js';

export class TrialFileReader {
  /** `regular`: the trial-relative paths the walk found to be regular files; null for a directory we wrote ourselves (a capture's copy). */
  constructor(
    readonly root: string,
    private readonly regular: ReadonlySet<string> | null,
  ) {}

  has(rel: string): boolean {
    return this.regular === null || this.regular.has(rel);
  }

  /** The file's text (at most `limit` characters, `…` appended when cut), or null. */
  text(rel: string, limit = Infinity): string | null {
    if (!this.has(rel)) return null;
    let fd: number;
    let st;
    try {
      ({ fd, stat: st } = openInside(this.root, rel));
    } catch {
      return null;
    }
    try {
      const want = Number.isFinite(limit) ? Math.min(st.size, limit * 4 + 4) : st.size;
      const buf = Buffer.alloc(want);
      let at = 0;
      while (at < want) {
        const n = readSync(fd, buf, at, want - at, at);
        if (n === 0) break;
        at += n;
      }
      const text = buf.subarray(0, at).toString('utf8');
      return text.length > limit ? `${text.slice(0, limit)}…` : text;
    } catch {
      return null;
    } finally {
      closeSync(fd);
    }
  }

  /** Parsed JSON (Python's NaN and Infinity tolerated), or undefined. */
  json(rel: string): unknown {
    const text = this.text(rel);
    if (text === null) return undefined;
    try {
      return parsePythonJson(text);
    } catch {
      return undefined;
    }
  }

  jsonObject(rel: string): Record<string, unknown> | null {
    const v = this.json(rel);
    return isPlainObject(v) ? v : null;
  }
}
