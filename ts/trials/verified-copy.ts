/**
 * Copies one file into a capture and proves the copy: the bytes are hashed as read, written
 * under a temporary name, flushed to disk, then renamed into place, so a crash or an outage
 * leaves either the old file or the whole new one. Directories on the way are checked to
 * resolve inside the destination root: a symbolic link planted there cannot lead the copy
 * out of the run directory.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdir, open, realpath, rename, rm, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';

import { openInsideAsync } from './open-inside.js';
import { hostPath, isInside } from './safe-path.js';

export interface CopiedFile {
  size: number;
  sha256: string;
}

export function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

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

/** `writeDurable` without blocking the event loop (a training loop may be running beside it). */
async function writeDurableAsync(file: string, bytes: Uint8Array): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  const fh = await open(tmp, 'wx');
  try {
    await fh.writeFile(bytes);
    await fh.sync();
  } catch (e) {
    await fh.close();
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  try {
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

/** Creates the directories of `rel` under `root` and checks they resolve inside it. */
async function ensureParentInside(root: string, rel: string): Promise<string> {
  const dest = hostPath(root, rel);
  const dir = path.dirname(dest);
  // the destination root must already exist: storage that went away (an unmounted volume)
  // must fail the copy, not be recreated on the local disk beneath the mount point
  try {
    await stat(root);
  } catch (e) {
    throw new Error(`the destination ${root} is not reachable: ${(e as Error).message}`);
  }
  await mkdir(dir, { recursive: true });
  const [realRoot, realDir] = await Promise.all([realpath(root), realpath(dir)]);
  if (!isInside(realRoot, realDir)) throw new Error(`refused to write ${rel}: ${path.dirname(rel)} resolves outside ${root}`);
  return dest;
}

/** A file that grew past the capture limit between the walk and the copy. */
export class GrewPastLimit extends Error {}

/**
 * Reads the whole file, at most `limit` bytes; more is an error (it grew since it was
 * sized). The buffer is sized from `fstat`, so a file read once needs one allocation.
 */
async function readCapped(fh: FileHandle, size: number, limit: number): Promise<Buffer> {
  let buf = Buffer.allocUnsafe(Math.min(size, limit) + 1);
  let total = 0;
  for (;;) {
    if (total === buf.length) {
      if (total > limit) throw new GrewPastLimit(`grew past the capture limit (${limit} bytes) while it was copied`);
      const grown = Buffer.allocUnsafe(Math.min(2 * buf.length, limit + 1));
      buf.copy(grown, 0, 0, total);
      buf = grown;
    }
    const { bytesRead } = await fh.read(buf, total, buf.length - total, total);
    if (bytesRead === 0) break;
    total += bytesRead;
  }
  if (total > limit) throw new GrewPastLimit(`grew past the capture limit (${limit} bytes) while it was copied`);
  return buf.subarray(0, total);
}

export interface CopyOptions {
  /** The sha256 the bytes must have (delivery: the staged hash); a mismatch writes nothing. */
  expectSha256?: string;
  /** Bytes a file may have (the capture limit). */
  maxBytes?: number;
}

/**
 * Copies `srcRoot/rel` to `destRoot/rel`: the source opened and proven inside `srcRoot`
 * (open-inside.ts), hashed as read, the copy written durably inside `destRoot`.
 */
export async function copyVerified(srcRoot: string, destRoot: string, rel: string, options: CopyOptions = {}): Promise<CopiedFile> {
  const { fh, stat } = await openInsideAsync(srcRoot, rel);
  let bytes: Buffer;
  try {
    bytes = await readCapped(fh, stat.size, options.maxBytes ?? Number.MAX_SAFE_INTEGER);
  } finally {
    await fh.close();
  }
  const sha256 = sha256Of(bytes);
  const expectSha256 = options.expectSha256;
  if (expectSha256 !== undefined && sha256 !== expectSha256) {
    throw new Error(`${rel} changed since it was collected (sha256 ${sha256.slice(0, 12)}… ≠ ${expectSha256.slice(0, 12)}…)`);
  }
  await writeDurableAsync(await ensureParentInside(destRoot, rel), bytes);
  return { size: bytes.length, sha256 };
}
