/**
 * What each file of a Harbor trial directory is (SOURCES.md of the Harbor fixtures, and
 * Harbor's TrialPaths): single-step trials keep `agent/`, `verifier/` and `artifacts/` at the
 * root; multi-step trials move them under `steps/<name>/`.
 */
export const FILE_ROLES = ['config', 'result', 'lock', 'trajectory', 'reward', 'agent_log', 'verifier_output', 'artifact', 'other'] as const;
export type FileRole = (typeof FILE_ROLES)[number];

/** `steps/<name>/rest` → [`steps/<name>/`, `rest`]; anything else → [``, path]. */
export function splitStepPrefix(rel: string): [string, string] {
  const m = /^(steps\/[^/]+\/)(.*)$/.exec(rel);
  return m ? [m[1], m[2]] : ['', rel];
}

/** The role of trial-relative `rel` by its place in the directory. */
export function roleOf(rel: string): FileRole {
  if (rel === 'config.json') return 'config';
  if (rel === 'result.json' || rel === 'results.json') return 'result';
  if (rel === 'lock.json') return 'lock';
  const [, inner] = splitStepPrefix(rel);
  if (inner === 'verifier/reward.json' || inner === 'verifier/reward.txt') return 'reward';
  if (/^agent\/trajectory(\.[^/]*)?\.json$/.test(inner)) return 'trajectory';
  if (inner.startsWith('agent/') || inner.startsWith('user-agent/')) return 'agent_log';
  if (inner.startsWith('verifier/')) return 'verifier_output';
  if (inner.startsWith('artifacts/')) return 'artifact';
  return 'other';
}
