/**
 * Reading a run's text files (manifest.json, events.jsonl) only when they are regular
 * files. A FIFO in their place blocked `readFileSync` until a writer appeared, and a
 * symlink to /dev/zero never ended: the file is opened without blocking and checked on the
 * open descriptor, and anything else is an error naming the file and what it is.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readlinkSync } from 'node:fs';
import type { Stats } from 'node:fs';

import { RlprobeError } from '../errors.js';
import type { RlprobeErrorCode } from '../errors.js';

function kindOf(s: Stats): string {
  if (s.isDirectory()) return 'a directory';
  if (s.isFIFO()) return 'a FIFO (named pipe)';
  if (s.isCharacterDevice()) return 'a character device';
  if (s.isBlockDevice()) return 'a block device';
  if (s.isSocket()) return 'a socket';
  return 'not a file';
}

/** What `file` is in words, with a symlink's target. */
function describe(file: string, s: Stats): string {
  const kind = kindOf(s);
  try {
    if (lstatSync(file).isSymbolicLink()) return `a symbolic link to ${readlinkSync(file)} (${kind})`;
  } catch {
    // gone since: the kind alone
  }
  return kind;
}

/**
 * The text of `file`, or null when it does not exist. Anything but a regular file (or a
 * file that cannot be opened) throws RlprobeError `code` naming it, what it is, and
 * `advice` (what to do).
 */
export function readRegularFile(file: string, code: RlprobeErrorCode, advice: string): string | null {
  const fd = openRegularFile(file, code, advice);
  if (fd === null) return null;
  try {
    return readFileSync(fd, 'utf8');
  } catch (error) {
    throw new RlprobeError(code, `${file}: cannot be read: ${(error as Error).message}; ${advice}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * An open descriptor of `file` (the caller closes it), or null when it does not exist;
 * anything but a regular file throws as `readRegularFile` does, closing what it opened.
 */
export function openRegularFile(file: string, code: RlprobeErrorCode, advice: string): number | null {
  const fail = (what: string) => new RlprobeError(code, `${file}: ${what}; ${advice}`);
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    // ENOTDIR: a path component is a file, so this file does not exist either
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null;
    if (e.code === 'ELOOP') throw fail('a symbolic link loop (too many levels of symbolic links), not a regular file');
    throw fail(`cannot be opened: ${e.message}`);
  }
  try {
    const s = fstatSync(fd);
    if (!s.isFile()) throw fail(`${describe(file, s)}, not a regular file`);
    return fd;
  } catch (error) {
    closeSync(fd);
    if (error instanceof RlprobeError) throw error;
    throw fail(`cannot be read: ${(error as Error).message}`);
  }
}
