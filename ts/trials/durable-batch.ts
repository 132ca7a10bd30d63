/**
 * Making many copied files durable at once. An fsync per file costs a journal commit each:
 * for 50,000 small files about 4 s on an ext4 VM, more than the copying itself, and more
 * threads do not help (the commits queue on the device). syncfs(2) commits every file of a
 * file system at once. Node has no syncfs, so on Linux the native addon calls it
 * (`syncFilesystemAsync`, on the libuv pool); where it is not available or fails, each file
 * of the batch is fsynced instead (the same guarantee, the old cost).
 *
 * syncfs flushes whatever else is dirty on that file system too, so it is used only for a
 * batch large enough to be worth it (SYNCFS_MIN files); a few files are fsynced one by one.
 *
 * A file is durable only once the batch holding it is committed: callers count nothing as
 * copied (nor write the manifest or journal line that says so) before `commitFiles` resolves.
 */
import { open, stat } from 'node:fs/promises';

import { syncFilesystemAsync } from '../native.js';
import { COPY_CONCURRENCY, mapConcurrent } from './concurrently.js';

/** Batches smaller than this are fsynced file by file. */
const SYNCFS_MIN = 64;

/** Whether syncfs worked when last tried (null: not tried yet). */
let syncfsWorks: boolean | null = process.platform === 'linux' ? null : false;

function syncfs(dir: string): Promise<boolean> {
  return syncFilesystemAsync(dir).then(
    () => true,
    () => false,
  );
}

async function fsyncFile(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Makes `files` (written under `dir`, already closed) durable: one syncfs of `dir`'s file
 * system, or an fsync each. Throws when a file cannot be made durable.
 */
export async function commitFiles(dir: string, files: readonly string[]): Promise<void> {
  if (files.length === 0) return;
  if (syncfsWorks !== false && files.length >= SYNCFS_MIN) {
    const ok = await syncfs(dir);
    if (ok) {
      syncfsWorks = true;
      return;
    }
    // once it failed where it never worked, stop trying; a failure after it worked is retried
    if (syncfsWorks === null) syncfsWorks = false;
  }
  try {
    await mapConcurrent(files, COPY_CONCURRENCY, fsyncFile);
  } catch (e) {
    // storage that went away fails every file alike: say that, not the first file's ENOENT
    await stat(dir).catch((gone: Error) => {
      // oxlint-disable-next-line preserve-caught-error -- the cause is the stat failure, not the copy's
      throw new Error(`the destination ${dir} is not reachable: ${gone.message}`, { cause: gone });
    });
    throw e;
  }
}
