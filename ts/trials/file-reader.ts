/**
 * Reading a trial's own files (result, config, rewards, manifests) as data. Only files the
 * walk found to be regular are read — a name that is a symbolic link, or lies under a
 * linked directory, was never walked into and is not in the set — and each is opened by
 * `openInside`, so a file or directory swapped for a link after the walk is refused too.
 */
import { closeSync, readSync } from 'node:fs';

import { parsePythonJson } from '../files/python-json.js';
import { openInside } from './open-inside.js';

/** Bytes of a JSON document read whole (result, config, reward, artifacts manifest). */
export const MAX_DOCUMENT_BYTES = 16 << 20;

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
    const doc = this.document(rel);
    return doc !== null && 'value' in doc ? doc.value : undefined;
  }

  /**
   * A JSON document and, when it cannot be read, why: null when the file is absent, else
   * its value or the error. Documents the trial describes itself with are small; one past
   * MAX_DOCUMENT_BYTES is refused rather than read into memory.
   */
  document(rel: string): { value: unknown } | { problem: string } | null {
    if (!this.has(rel)) return null;
    let size: number;
    try {
      const { fd, stat } = openInside(this.root, rel);
      closeSync(fd);
      size = stat.size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null; // gone since the walk, or never there (a capture's copy)
      return { problem: `not readable (${(e as Error).message})` };
    }
    if (size > MAX_DOCUMENT_BYTES) return { problem: `too large to read as a document (${size} bytes > ${MAX_DOCUMENT_BYTES})` };
    const text = this.text(rel);
    if (text === null) return { problem: 'not readable' };
    try {
      return { value: parsePythonJson(text) };
    } catch (e) {
      return { problem: `not valid JSON (${(e as Error).message})` };
    }
  }
}
