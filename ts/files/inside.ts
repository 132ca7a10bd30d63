import path from 'node:path';

/** Whether path `p` is `dir` or lies below it (both absolute, links already resolved). */
export function inside(dir: string, p: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
