/**
 * What the listed files were when the views were built. DuckDB opens a file only when a
 * query reads it, so a compaction landing meanwhile (a run closing) could have it read the
 * new compacted file and the parts it absorbed. The listing is stale, and the query is run
 * on a fresh one, when a listed file is already gone when its identity is taken, when one
 * is replaced or removed while the query runs, or when a listing taken after the query no
 * longer holds one (a compaction killed before deleting the parts it absorbed).
 */
import { statSync } from 'node:fs';

/** Each listed file's identity (device, inode, size, mtime), or null when it is gone. */
export type FileSnapshot = ReadonlyMap<string, string | null>;

function identity(file: string): string | null {
  try {
    const s = statSync(file, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}`;
  } catch {
    return null;
  }
}

export function snapshotFiles(files: Iterable<string>): FileSnapshot {
  const out = new Map<string, string | null>();
  for (const f of files) out.set(f, identity(f));
  return out;
}

/** Listed files that were already gone when the snapshot was taken: the listing is stale. */
export function goneFiles(snapshot: FileSnapshot): string[] {
  return [...snapshot].filter(([, id]) => id === null).map(([file]) => file);
}

/** The files of `before` that are no longer the same file (replaced, rewritten, removed). */
export function changedFiles(before: FileSnapshot): string[] {
  return [...before].filter(([file, id]) => identity(file) !== id).map(([file]) => file);
}

/**
 * The files of `before` that a later listing `after` leaves out (files it adds are new
 * parts, read by the next query: the result stays the state of the first listing).
 */
export function unlistedFiles(before: Iterable<string>, after: Iterable<string>): string[] {
  const now = new Set(after);
  return [...before].filter((f) => !now.has(f));
}
