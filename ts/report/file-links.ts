/**
 * Links from a report to files of the run (captured trials, their trajectories). Relative to
 * the directory the report is written to, so a folder holding the report and the runs can be
 * shared, unpacked or moved and every link still opens; an absolute `file://` URL only when
 * asked for (`null`) or when no relative path exists (another drive on Windows).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Where links are relative to: a directory, or null for absolute `file://` URLs. */
export type LinkBase = string | null;

export function fileHref(target: string, base: LinkBase): string {
  const absolute = path.resolve(target);
  if (base === null) return pathToFileURL(absolute).href;
  const relative = path.relative(path.resolve(base), absolute);
  if (path.isAbsolute(relative)) return pathToFileURL(absolute).href;
  if (relative === '') return './';
  // each segment encoded: a space, `#` or `?` in a name must not end the path, nor `:` make a
  // scheme, nor a parenthesis end a Markdown link
  const segment = (s: string) => encodeURIComponent(s).replace(/\(/g, '%28').replace(/\)/g, '%29');
  return relative.split(path.sep).map(segment).join('/');
}
