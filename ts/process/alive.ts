/**
 * Whether a process with this pid exists on this host: signal 0 checks without delivering.
 * EPERM means it exists but belongs to another user, which still counts as alive.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
