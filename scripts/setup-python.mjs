#!/usr/bin/env node
// Creates (or reuses) one of the project's pinned virtualenvs. Idempotent: a stamp holding
// the requirements' hash skips the install when nothing changed.
//   interop  .venv-interop/: the Python clients the interop tests compare against
//            (test/interop/requirements.txt)
//   build    .venv-build/: Zig and cargo-zigbuild, which build the Linux binaries for
//            glibc 2.17 (scripts/requirements-build.txt)
//
//   node scripts/setup-python.mjs [interop|build]   create or reuse; prints the venv's python
//   RLPROBE_PYTHON_BASE=python3.11 …                the interpreter to create it with
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const VENVS = {
  interop: { dir: '.venv-interop', requirements: 'test/interop/requirements.txt' },
  build: { dir: '.venv-build', requirements: 'scripts/requirements-build.txt' },
};
const which = process.argv[2] ?? 'interop';
if (!(which in VENVS)) {
  process.stderr.write(`setup-python: unknown virtualenv "${which}"; expected one of ${Object.keys(VENVS).join(', ')}\n`);
  process.exit(2);
}
const venv = path.join(root, VENVS[which].dir);
const requirements = path.join(root, VENVS[which].requirements);
const stamp = path.join(venv, '.rlprobe-requirements');
const python = path.join(venv, process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');

function run(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status}`);
}

const want = createHash('sha256').update(readFileSync(requirements)).digest('hex');
if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8') === want) {
  console.log(python);
  process.exit(0);
}
const base = process.env.RLPROBE_PYTHON_BASE ?? 'python3';
try {
  rmSync(venv, { recursive: true, force: true });
  process.stderr.write(`setup-python: creating ${venv} with ${base}\n`);
  run(base, ['-m', 'venv', venv]);
  run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', requirements]);
  writeFileSync(stamp, want);
} catch (error) {
  process.stderr.write(`setup-python: ${error.message}\n`);
  process.exit(1);
}
console.log(python);
