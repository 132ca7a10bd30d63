/**
 * scripts/sync-versions.mjs keeps the platform packages and the binding crate at the root
 * package's version. Run on a copy of the files it touches, so the repository stays as is.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT, freshTempDir } from './helpers/child.js';

function copyOfRepo(dir: string): void {
  for (const entry of ['package.json', 'Cargo.toml', 'npm', 'native/platforms.js', 'scripts/sync-versions.mjs']) {
    mkdirSync(path.dirname(path.join(dir, entry)), { recursive: true });
    cpSync(path.join(REPO_ROOT, entry), path.join(dir, entry), { recursive: true });
  }
}

function sync(dir: string, ...args: string[]) {
  return spawnSync(process.execPath, [path.join(dir, 'scripts', 'sync-versions.mjs'), ...args], { encoding: 'utf8' });
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));

test('the repository is in step', () => {
  const result = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'sync-versions.mjs'), '--check'], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
});

test('a new root version: --check names every stale file, a sync fixes them all', (t) => {
  const tmp = freshTempDir('sync-versions');
  t.after(tmp.cleanup);
  copyOfRepo(tmp.dir);
  const manifest = readJson(path.join(tmp.dir, 'package.json'));
  writeFileSync(path.join(tmp.dir, 'package.json'), JSON.stringify({ ...manifest, version: '0.2.0' }, null, 2));

  const check = sync(tmp.dir, '--check');
  assert.equal(check.status, 1);
  const platforms = manifest.napi.targets.length as number;
  assert.equal((check.stderr.match(/npm\/[\w-]+\/package\.json/g) ?? []).length, platforms, check.stderr);
  assert.match(check.stderr, /Cargo\.toml/);

  assert.equal(sync(tmp.dir).status, 0);
  assert.equal(sync(tmp.dir, '--check').status, 0);
  const musl = readJson(path.join(tmp.dir, 'npm', 'linux-x64-musl', 'package.json'));
  assert.deepEqual(
    { name: musl.name, version: musl.version, os: musl.os, cpu: musl.cpu, libc: musl.libc, files: musl.files },
    { name: 'rlprobe-linux-x64-musl', version: '0.2.0', os: ['linux'], cpu: ['x64'], libc: ['musl'], files: ['rlprobe.linux-x64-musl.node'] },
  );
  const mac = readJson(path.join(tmp.dir, 'npm', 'darwin-arm64', 'package.json'));
  assert.deepEqual([mac.os, mac.cpu, mac.libc], [['darwin'], ['arm64'], undefined]);
  assert.match(readFileSync(path.join(tmp.dir, 'Cargo.toml'), 'utf8'), /\[package\]\nname = "rlprobe-node"\nversion = "0\.2\.0"/);
});

test('--repository names the repository in every manifest, and refuses anything but a GitHub URL', (t) => {
  const tmp = freshTempDir('sync-versions');
  t.after(tmp.cleanup);
  copyOfRepo(tmp.dir);
  const bad = sync(tmp.dir, '--repository', 'git@github.com:someone/rlprobe');
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--repository wants https:\/\/github\.com\/OWNER\/NAME, got "git@github\.com:someone\/rlprobe"/);

  assert.equal(sync(tmp.dir, '--repository', 'https://github.com/someone/rlprobe').status, 0);
  const url = 'git+https://github.com/someone/rlprobe.git';
  assert.equal(readJson(path.join(tmp.dir, 'package.json')).repository.url, url);
  assert.equal(readJson(path.join(tmp.dir, 'npm', 'win32-x64-msvc', 'package.json')).repository.url, url);
});
