import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The interop virtualenv's python (created by scripts/setup-python.mjs, which .ci/run
 * runs; created here on first use otherwise). Returns null only outside CI when no Python
 * can make one, so a laptop without Python skips; in CI a missing Python fails the suite.
 */
export function interopPython(): { python: string } | { skip: string } {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'setup-python.mjs')], { encoding: 'utf8', timeout: 600_000 });
  const python = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status === 0 && existsSync(python)) return { python };
  const why = `could not set up the Python interop virtualenv: ${r.stderr.trim() || r.error?.message || `exit ${r.status}`}`;
  if (process.env.CI) throw new Error(why);
  return { skip: why };
}

/** Runs a script of test/interop with the venv's python; parses its JSON stdout. */
export function runPython(python: string, script: string, args: string[]): unknown {
  const r = spawnSync(python, [path.join(root, 'test', 'interop', script), ...args], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: 300_000,
  });
  if (r.status !== 0) throw new Error(`${script} exited with ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout, (_k, v) => (v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v));
}
