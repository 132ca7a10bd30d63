#!/usr/bin/env node
// Creates (or reuses) the virtualenv the Python interop tests run in: .venv-interop/,
// with the pinned packages of test/interop/requirements.txt. Idempotent: a stamp holding
// the requirements' hash skips the install when nothing changed.
//
//   node scripts/setup-python.mjs          create or reuse; prints the venv's python
//   RLPROBE_PYTHON_BASE=python3.11 …       the interpreter to create it with
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const venv = path.join(root, '.venv-interop');
const requirements = path.join(root, 'test', 'interop', 'requirements.txt');
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
