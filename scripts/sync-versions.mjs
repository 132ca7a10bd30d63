#!/usr/bin/env node
// Keeps every published package in step with the root package.json: each npm/<platform>/
// package.json (name, version, engines, os/cpu/libc) and the binding crate's version in
// Cargo.toml. The root's optionalDependencies are not stored in the repository: a source
// checkout must build its own addon, never fetch a published one; scripts/release-pack.mjs
// adds them to the packed root package (see platformDependencies).
//
//   node scripts/sync-versions.mjs           rewrite what is out of step
//   node scripts/sync-versions.mjs --check   exit 1 and list what is out of step
//   node scripts/sync-versions.mjs --repository https://github.com/OWNER/NAME
//                                            also set repository.url everywhere (npm provenance
//                                            needs it to name the repository that built the package)
//   npm version <x.y.z>                      runs this (the package's `version` script)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PREBUILT_PLATFORMS } from '../native/platforms.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const rootManifest = path.join(root, 'package.json');
const rootPackage = JSON.parse(readFileSync(rootManifest, 'utf8'));

/** What npm/<platform>/package.json must say: npm installs it only where it runs. */
export function platformPackage(entry) {
  const [os, cpu, abi] = entry.platform.split('-');
  const file = `rlprobe.${entry.platform}.node`;
  return {
    name: `rlprobe-${entry.platform}`,
    version: rootPackage.version,
    description: `The ${entry.target} native addon of rlprobe (${entry.runsOn})`,
    license: rootPackage.license,
    repository: rootPackage.repository,
    engines: rootPackage.engines,
    os: [os],
    cpu: [cpu],
    ...(os === 'linux' ? { libc: [abi === 'musl' ? 'musl' : 'glibc'] } : {}),
    main: file,
    files: [file],
  };
}

/** The root package's optionalDependencies: every platform package at exactly its version. */
export function platformDependencies() {
  return Object.fromEntries(PREBUILT_PLATFORMS.map((p) => [`rlprobe-${p.platform}`, rootPackage.version]));
}

function syncCargoVersion(text) {
  // the [package] table of the binding crate (the workspace root), not a dependency's version
  return text.replace(/(\[package\]\nname = "rlprobe-node"\nversion = ")[^"]*(")/, `$1${rootPackage.version}$2`);
}

function main() {
  const check = process.argv.includes('--check');
  const repositoryAt = process.argv.indexOf('--repository');
  const stale = [];
  const write = (file, want, have) => {
    if (want === have) return;
    stale.push(path.relative(root, file));
    if (!check) writeFileSync(file, want);
  };
  if (repositoryAt >= 0) {
    const url = process.argv[repositoryAt + 1];
    if (!/^https:\/\/github\.com\/[^/]+\/[^/]+$/.test(url ?? '')) {
      process.stderr.write(`sync-versions: --repository wants https://github.com/OWNER/NAME, got ${JSON.stringify(url ?? null)}\n`);
      process.exit(2);
    }
    const have = readFileSync(rootManifest, 'utf8');
    rootPackage.repository = { type: 'git', url: `git+${url}.git` };
    write(rootManifest, `${JSON.stringify(rootPackage, null, 2)}\n`, have);
  }
  for (const entry of PREBUILT_PLATFORMS) {
    const file = path.join(root, 'npm', entry.platform, 'package.json');
    const have = existsSync(file) ? readFileSync(file, 'utf8') : '';
    write(file, `${JSON.stringify(platformPackage(entry), null, 2)}\n`, have);
  }
  const cargoToml = path.join(root, 'Cargo.toml');
  const cargoText = readFileSync(cargoToml, 'utf8');
  write(cargoToml, syncCargoVersion(cargoText), cargoText);

  if (check && stale.length > 0) {
    process.stderr.write(`sync-versions: out of step with package.json ${rootPackage.version}: ${stale.join(', ')}\n`);
    process.stderr.write('run `node scripts/sync-versions.mjs` to fix\n');
    process.exit(1);
  }
  if (!check) process.stderr.write(`sync-versions: ${stale.length === 0 ? 'all in step' : `updated ${stale.join(', ')}`} (${rootPackage.version})\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
