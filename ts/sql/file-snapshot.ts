/**
 * What the listed files were when the views were built. DuckDB opens a file only when a
 * query reads it, so a compaction finishing meanwhile (a run closing) could have it read
 * the new compacted file and the parts it absorbed: the query is run again on a fresh
 * listing when any listed file was replaced or removed in between.
 */
import { statSync } from 'node:fs';

export type FileSnapshot = ReadonlyMap<string, string>;

function identity(file: string): string {
  try {
    const s = statSync(file, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}`;
  } catch {
    return 'gone';
  }
}

export function snapshotFiles(files: Iterable<string>): FileSnapshot {
  const out = new Map<string, string>();
  for (const f of files) out.set(f, identity(f));
  return out;
}

/** The files of `before` that are no longer the same file (replaced, rewritten, removed). */
export function changedFiles(before: FileSnapshot): string[] {
  return [...before].filter(([file, id]) => identity(file) !== id).map(([file]) => file);
}
