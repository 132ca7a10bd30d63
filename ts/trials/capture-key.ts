/**
 * The key of a capture: its directory name under `trials/`. It is derived from the trial's
 * identity, so capturing the same trial again lands in the same place (and replaces it),
 * while a retry that reuses the directory name but wrote a new result id is a new capture.
 * Identity is `result.json` `id`; a trial that never wrote its result is known by its
 * directory name until it does.
 */
import { keyedSpanId } from '../wire/span-id.js';

const SLUG_MAX = 80;

function slug(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[.-]+/, '')
    .replace(/-+$/, '')
    .slice(0, SLUG_MAX);
  return s === '' ? 'trial' : s;
}

export function trialIdentity(trialId: string | null, dirName: string): string {
  return trialId !== null ? `id:${trialId}` : `dir:${dirName}`;
}

/** `<readable name>.<12 hex digits of the identity hash>`. */
export function captureKeyOf(name: string, identity: string): string {
  return `${slug(name)}.${keyedSpanId('rlprobe.trial', identity).slice(0, 12)}`;
}
