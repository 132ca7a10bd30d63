/**
 * Opening a file that must lie inside a directory, checked on the open file itself. Opening
 * with O_NOFOLLOW refuses a link at the last component only; a directory on the way swapped
 * for a link after the walk would still be followed. So once open, the file's real path is
 * read back from the descriptor (`/proc/self/fd/N` on Linux; the path's realpath elsewhere,
 * which leaves a narrow race there) and must lie inside the directory, and it must be a
 * regular file.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readlinkSync, realpathSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

import { hostPath, isInside } from './safe-path.js';

const PROC_FD = existsSync('/proc/self/fd');

/** Real paths of roots, resolved once per process (a root does not move under a capture). */
const realRoots = new Map<string, string>();

function realRoot(root: string): string {
  let r = realRoots.get(root);
  if (r === undefined) {
    r = realpathSync(root);
    if (realRoots.size > 1024) realRoots.clear();
    realRoots.set(root, r);
  }
  return r;
}

/** Throws unless the descriptor `fd` of `root/rel` is a regular file inside `root`. */
function checkOpened(root: string, rel: string, fd: number, stat: Stats): void {
  if (!stat.isFile()) throw new Error(`${rel} is not a regular file`);
  const real = PROC_FD ? readlinkSync(`/proc/self/fd/${fd}`) : realpathSync(hostPath(root, rel));
  if (!isInside(realRoot(root), real)) throw new Error(`${rel} resolves outside ${root} (a directory on its path is a link): refused`);
}

/** An open descriptor of `root/rel` proven to be a regular file inside `root`; the caller closes it. */
export function openInside(root: string, rel: string): { fd: number; stat: Stats } {
  const fd = openSync(hostPath(root, rel), constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const stat = fstatSync(fd);
    checkOpened(root, rel, fd, stat);
    return { fd, stat };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** `openInside` without blocking: a FileHandle the caller closes. */
export async function openInsideAsync(root: string, rel: string): Promise<{ fh: FileHandle; stat: Stats }> {
  const fh = await open(hostPath(root, rel), constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const stat = await fh.stat();
    checkOpened(root, rel, fh.fd, stat);
    return { fh, stat };
  } catch (e) {
    await fh.close();
    throw e;
  }
}
