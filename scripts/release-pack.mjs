#!/usr/bin/env node
// Writes the publishable tarballs into one folder: the root `rlprobe` package (with an
// optional dependency on every platform package, at exactly its version) and each
// `rlprobe-<platform>` package whose binary is present. Binaries this machine can build are
// built first (release, stripped, glibc 2.17 for linux *-gnu); the others come from the
// release workflow's artifacts (`napi artifacts` puts them in npm/<platform>/).
//
//   npm run release:pack                       build what can be built here, pack into release/
//   node scripts/release-pack.mjs --out DIR    another folder
//   node scripts/release-pack.mjs --no-build   pack the binaries already in npm/<platform>/
//   node scripts/release-pack.mjs --only linux-x64-gnu[,…]   build and pack only these platforms
// Prints a summary and writes DIR/release.json (file, packed and unpacked size of each).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PREBUILT_PLATFORMS } from '../native/platforms.js';
import { platformDependencies } from './sync-versions.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const options = parseArgs(process.argv.slice(2));
const outDir = path.resolve(options.out ?? path.join(root, 'release'));

function parseArgs(argv) {
  const parsed = { noBuild: false, out: undefined, only: undefined };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--no-build') parsed.noBuild = true;
    else if (argv[i] === '--out') parsed.out = argv[++i] ?? fail('--out needs a folder');
    else if (argv[i] === '--only') {
      parsed.only = (argv[++i] ?? fail('--only needs platforms, e.g. linux-x64-gnu')).split(',');
      const unknown = parsed.only.filter((p) => !PREBUILT_PLATFORMS.some((e) => e.platform === p));
      if (unknown.length > 0) fail(`--only: unknown platform ${unknown[0]} (known: ${PREBUILT_PLATFORMS.map((e) => e.platform).join(', ')})`);
    } else fail(`unknown option ${argv[i]} (expected --out <dir>, --no-build, --only <platforms>)`);
  }
  return parsed;
}
const selected = (entry) => !options.only || options.only.includes(entry.platform);

function fail(message) {
  process.stderr.write(`release-pack: ${message}\n`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });
  if (result.error) fail(`${command}: ${result.error.message}`);
  if (result.status !== 0) fail(`${command} ${args.join(' ')} exited with ${result.status}`);
  return result.stdout;
}

/** Targets this machine can build: Linux ones (through Zig) whose Rust std is installed. */
function buildableTargets() {
  if (process.platform !== 'linux') return [];
  const installed = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' });
  const targets = new Set((installed.stdout ?? '').split('\n').map((l) => l.trim()).filter(Boolean));
  if (targets.size === 0) {
    // no rustup: only the toolchain's own host target
    const host = /^host: (\S+)$/m.exec(spawnSync('rustc', ['-vV'], { encoding: 'utf8' }).stdout ?? '')?.[1];
    if (host) targets.add(host);
  }
  return PREBUILT_PLATFORMS.filter((p) => p.target.includes('-linux-') && targets.has(p.target));
}

/** The root package as published: npm's own file list for `files`, and a trimmed manifest. */
function stageRootPackage(stageDir) {
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  rmSync(stageDir, { recursive: true, force: true });
  mkdirSync(stageDir, { recursive: true });
  const [listing] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts']));
  for (const { path: file } of listing.files) {
    if (file === 'package.json') continue;
    mkdirSync(path.dirname(path.join(stageDir, file)), { recursive: true });
    cpSync(path.join(root, file), path.join(stageDir, file));
  }
  const published = {
    ...manifest,
    // the install script only checks that an addon loads (or builds one when asked)
    scripts: { install: manifest.scripts.install },
    optionalDependencies: platformDependencies(),
  };
  delete published.devDependencies;
  delete published.overrides;
  writeFileSync(path.join(stageDir, 'package.json'), `${JSON.stringify(published, null, 2)}\n`);
}

function listFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

function pack(dir) {
  // --ignore-scripts: packing must not run `prepare` (tsc) or the install check
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', outDir], { cwd: dir }));
  return { name: info.name, version: info.version, file: info.filename, size: info.size, unpackedSize: info.unpackedSize };
}

run(process.execPath, [path.join(root, 'scripts', 'sync-versions.mjs'), '--check'], { stdio: 'inherit' });
if (!options.noBuild) {
  for (const entry of buildableTargets().filter(selected)) {
    run(process.execPath, [path.join(root, 'scripts', 'build-native.mjs'), '--target', entry.target, '--out', path.join(root, 'npm', entry.platform)], {
      stdio: 'inherit',
    });
  }
}
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const emitted = new Set();
for (const config of ['tsconfig.build.json', 'tsconfig.types.json']) {
  for (const line of run(process.execPath, [tsc, '-p', config, '--listEmittedFiles']).split('\n')) {
    if (line.startsWith('TSFILE: ')) emitted.add(path.resolve(line.slice('TSFILE: '.length)));
  }
}
// a module deleted from ts/ must not live on in the tarball: drop what this build did not emit
// (not `rm -rf dist` first, which would pull dist/ from under a test or bench using it)
for (const file of listFiles(path.join(root, 'dist'))) if (!emitted.has(file)) rmSync(file);

mkdirSync(outDir, { recursive: true });
const packed = [];
const missing = [];
for (const entry of PREBUILT_PLATFORMS.filter(selected)) {
  const dir = path.join(root, 'npm', entry.platform);
  if (existsSync(path.join(dir, `rlprobe.${entry.platform}.node`))) packed.push({ ...pack(dir), platform: entry.platform });
  else missing.push(entry.platform);
}
const stageDir = path.join(outDir, '.stage', 'rlprobe');
stageRootPackage(stageDir);
packed.push(pack(stageDir));
rmSync(path.join(outDir, '.stage'), { recursive: true, force: true });

writeFileSync(path.join(outDir, 'release.json'), `${JSON.stringify({ packages: packed, notBuilt: missing }, null, 2)}\n`);
const kB = (n) => `${(n / 1000).toFixed(1)} kB`;
for (const p of packed) process.stdout.write(`${p.file}  ${kB(p.size)} packed, ${kB(p.unpackedSize)} unpacked\n`);
if (missing.length > 0) process.stdout.write(`not built here (the release workflow builds them): ${missing.join(', ')}\n`);
