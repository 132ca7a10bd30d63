/**
 * Copies one file into a capture and proves the copy: the bytes are hashed as they pass,
 * written under a temporary name, flushed to disk, then renamed into place, so a crash or an
 * outage leaves either the old file or the whole new one. The destination is checked to lie
 * inside the destination root on the open temporary file itself: a symbolic link planted on
 * the way cannot lead the copy out of the run directory.
 *
 * Two paths, one contract. A small file (most of a trial's files) is read whole with direct
 * calls — a few microseconds each from the page cache, where a call through the thread pool
 * costs a round trip — and written through the pool. A large one streams through in chunks,
 * every call in the pool: it is never held whole in memory, and never blocks the event loop
 * for long. A caller copying many files may defer the small files' fsync (`deferSync`) and
 * make them durable together (durable-batch.ts) before it counts any of them as copied.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readlinkSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdir, open, realpath, rename, rm, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';

import { openInside, openInsideAsync } from './open-inside.js';
import { hostPath, isInside } from './safe-path.js';

export interface CopiedFile {
  size: number;
  sha256: string;
}

/** Bytes read and written at a time. */
const CHUNK = 1 << 20;
/** Files up to this size are copied with direct calls (see the module comment). */
const SMALL_FILE = 256 * 1024;
const PROC_FD = existsSync('/proc/self/fd');

export function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Distinct per temporary name in this process; random at start, so a reused pid does not walk an old leftover's names. */
let tempSeq = randomBytes(4).readUInt32BE(0);

/**
 * A temporary name in the destination's directory. Short and independent of the file's own
 * name, so a 255-byte name still has room for it; `TEMP_NAME` recognises leftovers.
 */
function tempName(): string {
  tempSeq = (tempSeq + 1) >>> 0;
  return `.rlprobe.tmp-${process.pid}-${tempSeq.toString(16).padStart(8, '0')}`;
}

/** Temporaries an interrupted copy or record write leaves behind (both name patterns). */
export const TEMP_NAME = /^\..+\.tmp-\d+-[0-9a-f]{8}$/;

/** Writes `bytes` to `file` atomically and durably. */
export function writeDurable(file: string, bytes: Uint8Array | string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  const fd = openSync(tmp, 'wx');
  try {
    const buf = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    let at = 0;
    while (at < buf.length) at += writeSync(fd, buf, at, buf.length - at);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** The sha256 and size of a file, read in chunks; null when it cannot be read. */
export function sha256OfFile(file: string): CopiedFile | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const hash = createHash('sha256');
    const buf = Buffer.allocUnsafe(CHUNK);
    let size = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      size += n;
    }
    return { size, sha256: hash.digest('hex') };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The directories one copy run has made and proven inside its destination root, so a run of
 * many files checks each directory once. Each file is still checked on its own open
 * descriptor (where /proc/self/fd exists), which catches a directory swapped afterwards;
 * elsewhere every file's directory is checked again.
 */
export class DestinationDirs {
  private readonly made = new Set<string>();
  private realRoot: string | null = null;

  constructor(readonly root: string) {}

  /** The real path of the root, resolved once; throws when the root is not reachable. */
  async real(): Promise<string> {
    if (this.realRoot === null) this.realRoot = await realpath(this.root);
    return this.realRoot;
  }

  /**
   * Creates the directory of `rel` and checks it resolves inside the root. The root must
   * already exist: storage that went away (an unmounted volume) must fail the copy, not be
   * recreated on the local disk beneath the mount point.
   */
  async parentOf(rel: string): Promise<string> {
    const dir = path.dirname(hostPath(this.root, rel));
    if (PROC_FD && this.made.has(dir)) return dir;
    await this.reachable();
    await mkdir(dir, { recursive: true });
    const [realRoot, realDir] = await Promise.all([this.real(), realpath(dir)]);
    if (!isInside(realRoot, realDir)) throw new Error(`refused to write ${rel}: ${path.dirname(rel)} resolves outside ${this.root}`);
    this.made.add(dir);
    return dir;
  }

  /** Throws the clear error when the root itself is gone. */
  async reachable(): Promise<void> {
    try {
      await stat(this.root);
    } catch (e) {
      throw new Error(`the destination ${this.root} is not reachable: ${(e as Error).message}`, { cause: e });
    }
  }

  /** Forgets what was made (after a failure that may mean the directories went away). */
  forget(dir: string): void {
    this.made.delete(dir);
  }
}

/** A file that grew past the capture limit between the walk and the copy. */
export class GrewPastLimit extends Error {}

export interface CopyOptions {
  /** The sha256 the bytes must have (delivery: the staged hash); a mismatch writes nothing. */
  expectSha256?: string;
  /** Bytes a file may have (the capture limit). */
  maxBytes?: number;
  /** Shared by the copies of one run into the same root (see DestinationDirs). */
  dirs?: DestinationDirs;
  /**
   * Leave a small file's fsync to the caller, who commits its files together
   * (durable-batch.ts) before it counts them as copied. Large files are fsynced anyway.
   */
  deferSync?: boolean;
}

async function writeAll(fh: FileHandle, buf: Buffer, length: number): Promise<void> {
  let at = 0;
  while (at < length) at += (await fh.write(buf, at, length - at)).bytesWritten;
}

/** Opens a new temporary file in `dir`, proven (on its descriptor) to lie inside the root. */
async function openTemp(dirs: DestinationDirs, dir: string, rel: string): Promise<{ fh: FileHandle; tmp: string }> {
  const tmp = path.join(dir, tempName());
  let fh: FileHandle;
  try {
    fh = await open(tmp, 'wx');
  } catch (e) {
    // the directory went away since it was made: say whether the whole destination did
    dirs.forget(dir);
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') await dirs.reachable();
    throw e;
  }
  try {
    await checkInside(dirs, fh.fd, rel);
  } catch (e) {
    await fh.close();
    await rm(tmp, { force: true });
    throw e;
  }
  return { fh, tmp };
}

/**
 * Streams the source into the temporary file, hashing as it goes. Reading stops at the end
 * of the file; a file past `limit` is an error (it grew since it was sized).
 */
async function streamInto(src: FileHandle, size: number, out: FileHandle, limit: number): Promise<CopiedFile> {
  const hash = createHash('sha256');
  // one byte more than the size read at open: a full buffer means the file grew
  const buf = Buffer.allocUnsafe(Math.max(1, Math.min(size + 1, CHUNK)));
  let total = 0;
  for (;;) {
    const { bytesRead } = await src.read(buf, 0, buf.length, total);
    if (bytesRead === 0) break;
    total += bytesRead;
    if (total > limit) throw new GrewPastLimit(`grew past the capture limit (${limit} bytes) while it was copied`);
    hash.update(buf.subarray(0, bytesRead));
    await writeAll(out, buf, bytesRead);
    // a short read of a regular file at (or past) its size is its end: no read to confirm it
    if (bytesRead < buf.length && total >= size) break;
  }
  return { size: total, sha256: hash.digest('hex') };
}

/**
 * Copies `srcRoot/rel` to `destRoot/rel`: the source opened and proven inside `srcRoot`
 * (open-inside.ts), hashed as it is copied, the copy written durably inside `destRoot`.
 */
export async function copyVerified(srcRoot: string, destRoot: string, rel: string, options: CopyOptions = {}): Promise<CopiedFile> {
  const dirs = options.dirs ?? new DestinationDirs(destRoot);
  const limit = options.maxBytes ?? Number.MAX_SAFE_INTEGER;
  const bytes = readSmall(srcRoot, rel, limit);
  if (bytes === null) return copyStreaming(srcRoot, destRoot, rel, dirs, limit, options.expectSha256);
  const copied = { size: bytes.length, sha256: sha256Of(bytes) };
  checkExpected(rel, copied, options.expectSha256);
  await writeSmall(dirs, rel, bytes, options.deferSync === true);
  return copied;
}

function checkExpected(rel: string, copied: CopiedFile, expect: string | undefined): void {
  if (expect !== undefined && copied.sha256 !== expect) {
    throw new Error(`${rel} changed since it was collected (sha256 ${copied.sha256.slice(0, 12)}… ≠ ${expect.slice(0, 12)}…)`);
  }
}

/**
 * The bytes of a small file, read with direct calls; null when it is not small (or grew
 * past its size while read): the streaming path copies it instead.
 */
function readSmall(srcRoot: string, rel: string, limit: number): Buffer | null {
  const { fd, stat: st } = openInside(srcRoot, rel);
  try {
    if (st.size > SMALL_FILE) return null;
    // one byte more than its size: a full buffer means it grew since it was sized
    const buf = Buffer.allocUnsafe(st.size + 1);
    let total = 0;
    for (;;) {
      const n = readSync(fd, buf, total, buf.length - total, total);
      if (n === 0) break;
      total += n;
      if (total === buf.length) return null;
      if (total >= st.size) break; // a short read at its size is its end
    }
    if (total > limit) throw new GrewPastLimit(`grew past the capture limit (${limit} bytes) while it was copied`);
    return buf.subarray(0, total);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a small file's bytes under a temporary name, fsyncs it (unless deferred) and renames
 * it into place. Through the pool, not direct: creating and renaming files waits on the file
 * system's journal, which can take milliseconds while other files are being committed.
 */
async function writeSmall(dirs: DestinationDirs, rel: string, bytes: Buffer, deferSync: boolean): Promise<void> {
  const dir = await dirs.parentOf(rel);
  const { fh, tmp } = await openTemp(dirs, dir, rel);
  try {
    await writeAll(fh, bytes, bytes.length);
    if (!deferSync) await fh.sync();
  } catch (e) {
    await fh.close();
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  try {
    await rename(tmp, hostPath(dirs.root, rel));
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

/** Throws unless the open descriptor `fd` lies inside the destination root (where /proc/self/fd tells). */
async function checkInside(dirs: DestinationDirs, fd: number, rel: string): Promise<void> {
  if (!PROC_FD) return; // parentOf checked the directory (and checks it for every file)
  const real = readlinkSync(`/proc/self/fd/${fd}`);
  if (isInside(await dirs.real(), real)) return;
  // the whole destination moved away (an unmount) reads the same: say which it is
  await dirs.reachable();
  throw new Error(`refused to write ${rel}: ${path.dirname(rel)} resolves outside ${dirs.root}`);
}

/** A file too large to read whole: streamed in chunks, every call in the pool. */
async function copyStreaming(srcRoot: string, destRoot: string, rel: string, dirs: DestinationDirs, limit: number, expect: string | undefined): Promise<CopiedFile> {
  const { fh: src, stat: st } = await openInsideAsync(srcRoot, rel);
  try {
    const dir = await dirs.parentOf(rel);
    const { fh: out, tmp } = await openTemp(dirs, dir, rel);
    let copied: CopiedFile;
    try {
      copied = await streamInto(src, st.size, out, limit);
      checkExpected(rel, copied, expect);
      await out.sync();
    } catch (e) {
      await out.close();
      await rm(tmp, { force: true });
      throw e;
    }
    await out.close();
    try {
      await rename(tmp, hostPath(destRoot, rel));
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    return copied;
  } finally {
    await src.close();
  }
}
