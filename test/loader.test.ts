/**
 * native/index.js, the loader: which binary it takes, in which order, and the one error it
 * throws when none loads. Each case builds an installed layout in a temporary node_modules
 * (rlprobe with its loader, and a fake or real rlprobe-<platform> package) and imports the
 * loader in a child process, which reports from /proc/self/maps the .node file it mapped.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { REPO_ROOT, freshTempDir } from './helpers/child.js';

const PLATFORM = 'linux-x64-gnu';
const skip = process.platform === 'linux' && process.arch === 'x64' ? false : `the layouts use the ${PLATFORM} binary`;
const BINARY = path.join(REPO_ROOT, 'native', `rlprobe.${PLATFORM}.node`);
const VERSION = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).version as string;

interface Layout {
  /** rlprobe-<platform>: absent, or present with this version and binary. */
  platformPackage?: { version: string; binary: 'real' | 'garbage' };
  localBinary?: boolean;
}

interface LoadResult {
  loaded?: string;
  exports?: string[];
  code?: string;
  message?: string;
  causes?: number;
}

function install(dir: string, layout: Layout): string {
  const rlprobe = path.join(dir, 'node_modules', 'rlprobe');
  mkdirSync(path.join(rlprobe, 'native'), { recursive: true });
  writeFileSync(path.join(rlprobe, 'package.json'), JSON.stringify({ name: 'rlprobe', version: VERSION, type: 'module' }));
  for (const file of ['index.js', 'platforms.js']) copyFileSync(path.join(REPO_ROOT, 'native', file), path.join(rlprobe, 'native', file));
  if (layout.localBinary) copyFileSync(BINARY, path.join(rlprobe, 'native', `rlprobe.${PLATFORM}.node`));
  if (layout.platformPackage) {
    const pkg = path.join(dir, 'node_modules', `rlprobe-${PLATFORM}`);
    mkdirSync(pkg, { recursive: true });
    const main = `rlprobe.${PLATFORM}.node`;
    writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: `rlprobe-${PLATFORM}`, version: layout.platformPackage.version, main }));
    if (layout.platformPackage.binary === 'real') copyFileSync(BINARY, path.join(pkg, main));
    else writeFileSync(path.join(pkg, main), 'not an ELF file');
  }
  return path.join(rlprobe, 'native', 'index.js');
}

const CHILD = `
import { readFileSync } from 'node:fs';
try {
  const binding = await import(process.argv[1]);
  const loaded = readFileSync('/proc/self/maps', 'utf8').split('\\n').map((l) => l.split(/\\s+/).slice(5).join(' ')).find((f) => f.endsWith('.node'));
  console.log(JSON.stringify({ loaded, exports: Object.keys(binding).sort() }));
} catch (error) {
  console.log(JSON.stringify({ code: error.code, message: error.message, causes: error.cause?.errors?.length }));
}`;

function load(loader: string, env: NodeJS.ProcessEnv = {}, preload?: string): LoadResult {
  const args = [...(preload ? ['--import', preload] : []), '--input-type=module', '-e', CHILD, loader];
  const child = spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, RLPROBE_NATIVE_LIBRARY: '', ...env } });
  assert.equal(child.status, 0, child.stderr);
  return JSON.parse(child.stdout) as LoadResult;
}

describe('the native loader', { skip }, () => {
  test('takes the platform package first, when it is the same version', (t) => {
    const tmp = freshTempDir('loader');
    t.after(tmp.cleanup);
    const loader = install(tmp.dir, { platformPackage: { version: VERSION, binary: 'real' }, localBinary: true });
    const result = load(loader);
    assert.equal(result.loaded, path.join(tmp.dir, 'node_modules', `rlprobe-${PLATFORM}`, `rlprobe.${PLATFORM}.node`));
  });

  test('falls back to the locally built binary when the package is another version or does not load', (t) => {
    for (const platformPackage of [{ version: '0.0.9', binary: 'real' as const }, { version: VERSION, binary: 'garbage' as const }]) {
      const tmp = freshTempDir('loader');
      t.after(tmp.cleanup);
      const loader = install(tmp.dir, { platformPackage, localBinary: true });
      assert.equal(load(loader).loaded, path.join(tmp.dir, 'node_modules', 'rlprobe', 'native', `rlprobe.${PLATFORM}.node`), JSON.stringify(platformPackage));
    }
  });

  test('with nothing to load: one error naming the platform, each place tried, the supported list and the source build', (t) => {
    const tmp = freshTempDir('loader');
    t.after(tmp.cleanup);
    const result = load(install(tmp.dir, {}));
    assert.equal(result.code, 'RLPROBE_NATIVE_MISSING');
    assert.equal(result.causes, 2, 'the cause keeps every failed attempt');
    const message = result.message ?? '';
    assert.match(message, new RegExp(`no native addon loads on this machine: ${PLATFORM} \\(Node ${process.versions.node}, linux x64, glibc `));
    assert.match(message, /- package rlprobe-linux-x64-gnu: not installed/);
    assert.match(message, /- native\/rlprobe\.linux-x64-gnu\.node: not built/);
    assert.match(message, /Prebuilt binaries exist for: linux-x64-gnu \(Linux x64, glibc >= 2\.17\), linux-arm64-gnu .*, win32-x64-msvc \(Windows x64\)\./);
    assert.match(message, /reinstall without --omit=optional/);
    assert.match(message, /RLPROBE_BUILD_FROM_SOURCE=1 npm rebuild rlprobe/);
  });

  test('a platform package of another version is named with both versions', (t) => {
    const tmp = freshTempDir('loader');
    t.after(tmp.cleanup);
    const result = load(install(tmp.dir, { platformPackage: { version: '0.0.9', binary: 'real' } }));
    assert.match(result.message ?? '', new RegExp(`package rlprobe-linux-x64-gnu: version 0\\.0\\.9 is installed, rlprobe ${VERSION.replaceAll('.', '\\.')} needs the same version`));
    assert.doesNotMatch(result.message ?? '', /reinstall without --omit=optional/, 'the package is installed: that hint would mislead');
  });

  test('on a platform with no prebuilt binary the message says so, without the reinstall hint', (t) => {
    const tmp = freshTempDir('loader');
    t.after(tmp.cleanup);
    const preload = path.join(tmp.dir, 'riscv.mjs');
    writeFileSync(preload, "Object.defineProperty(process, 'arch', { value: 'riscv64' });\n");
    const result = load(install(tmp.dir, {}), {}, preload);
    assert.match(result.message ?? '', /no native addon loads on this machine: linux-riscv64-gnu \(Node .*riscv64/);
    assert.match(result.message ?? '', /package rlprobe-linux-riscv64-gnu: not installed/);
    assert.doesNotMatch(result.message ?? '', /is one of them/);
  });

  test('RLPROBE_NATIVE_LIBRARY is tried first, and a bad one is reported', (t) => {
    const tmp = freshTempDir('loader');
    t.after(tmp.cleanup);
    const loader = install(tmp.dir, { localBinary: true });
    assert.equal(load(loader, { RLPROBE_NATIVE_LIBRARY: BINARY }).loaded, BINARY);
    const missing = path.join(tmp.dir, 'nowhere.node');
    const fallback = load(loader, { RLPROBE_NATIVE_LIBRARY: missing });
    assert.equal(fallback.loaded, path.join(tmp.dir, 'node_modules', 'rlprobe', 'native', `rlprobe.${PLATFORM}.node`));
    const none = load(install(path.join(tmp.dir, 'empty'), {}), { RLPROBE_NATIVE_LIBRARY: missing });
    assert.match(none.message ?? '', new RegExp(`- RLPROBE_NATIVE_LIBRARY=${missing.replaceAll('.', '\\.')}: Cannot find module`));
  });

  test('exports exactly what the generated declarations declare', () => {
    const declared = [...readFileSync(path.join(REPO_ROOT, 'native', 'index.d.ts'), 'utf8').matchAll(/^export declare (?:class|function|const) (\w+)/gm)]
      .map((m) => m[1])
      .sort();
    const result = load(path.join(REPO_ROOT, 'native', 'index.js'));
    assert.deepEqual(result.exports, declared);
  });
});
