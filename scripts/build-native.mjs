#!/usr/bin/env node
// Builds rlprobe's native addon from source, or checks that a prebuilt one loads. It is the
// package's `install` script:
//   - installed from npm: compiles nothing unless asked. The prebuilt `rlprobe-<platform>`
//     package is used; when none fits, it says so (the same message `import 'rlprobe'` gives)
//     and the install still succeeds.
//   - a source checkout (`npm ci` in the repository): builds native/rlprobe.<platform>.node
//     when it is missing, with cargo-zigbuild for linux *-gnu so it runs on glibc >= 2.17.
// Asking for a source build: RLPROBE_BUILD_FROM_SOURCE=1 (or npm's --build-from-source).
//
//   node scripts/build-native.mjs                        the install step
//   node scripts/build-native.mjs --force                rebuild the host addon
//   node scripts/build-native.mjs --target <triple> --out <dir>
//                                                        a release binary (portable, stripped)
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PREBUILT_PLATFORMS, hostPlatform, platformOfTarget } from '../native/platforms.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = parseArgs(process.argv.slice(2));
// npm puts a package it installs under node_modules; a source checkout is anywhere else
const installedAsDependency = root.split(path.sep).includes('node_modules');
const sourceBuildRequested =
  ['1', 'true'].includes(process.env.RLPROBE_BUILD_FROM_SOURCE ?? '') ||
  process.env.npm_config_build_from_source === 'true';

function parseArgs(argv) {
  const parsed = { force: false, target: undefined, out: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--force') parsed.force = true;
    else if (arg === '--target' || arg === '--out') {
      const value = argv[++i];
      if (!value) fail(`${arg} needs a value`);
      parsed[arg.slice(2)] = value;
    } else fail(`unknown option ${arg} (expected --force, --target <triple>, --out <dir>)`);
  }
  if (parsed.out !== undefined && parsed.target === undefined) fail('--out needs --target');
  return parsed;
}

function fail(message, status = 1) {
  process.stderr.write(`rlprobe: ${message}\n`);
  process.exit(status);
}

function log(message) {
  process.stderr.write(`rlprobe: ${message}\n`);
}

/** The loader's verdict: null when an addon loads, else its error (which names what to do). */
async function nativeLoadError() {
  try {
    await import('../native/index.js');
    return null;
  } catch (error) {
    return error;
  }
}

function cargoAvailable(cargo) {
  return spawnSync(cargo, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** cargo-zigbuild (with Zig) from PATH or the project's .venv-build, set up on demand. */
function zigbuildPath({ setUp }) {
  const venvBin = path.join(root, '.venv-build', process.platform === 'win32' ? 'Scripts' : 'bin');
  const withVenv = `${venvBin}${path.delimiter}${process.env.PATH ?? ''}`;
  const works = (PATH) => spawnSync('cargo-zigbuild', ['--version'], { stdio: 'ignore', env: { ...process.env, PATH } }).status === 0;
  if (works(withVenv)) return withVenv;
  if (!setUp) return null;
  log('setting up Zig and cargo-zigbuild in .venv-build (node scripts/setup-python.mjs build)');
  const setup = spawnSync(process.execPath, [path.join(root, 'scripts', 'setup-python.mjs'), 'build'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return setup.status === 0 && works(withVenv) ? withVenv : null;
}

function libraryName(target) {
  if (target.includes('windows')) return 'rlprobe_node.dll';
  if (target.includes('apple')) return 'librlprobe_node.dylib';
  return 'librlprobe_node.so';
}

function rustHostTarget(cargo) {
  const rustc = spawnSync(process.env.RUSTC ?? 'rustc', ['-vV'], { encoding: 'utf8' });
  const host = /^host: (\S+)$/m.exec(rustc.stdout ?? '')?.[1];
  if (!host) fail(`could not ask rustc for the host target (is the Rust toolchain for ${cargo} complete?)`);
  return host;
}

/**
 * Builds the addon for `target` and copies it to `outDir/rlprobe.<platform>.node`.
 * `portable`: 'require' (release binaries: a linux *-gnu binary must be built for glibc
 * 2.17), 'prefer' (source checkout: use Zig when it can be set up), 'off' (a user's own
 * machine: their glibc is the one that matters).
 */
function build({ target: requestedTarget, outDir, portable }) {
  const cargo = process.env.CARGO ?? 'cargo';
  if (!cargoAvailable(cargo)) {
    fail(
      `cannot build the native addon for ${requestedTarget ? platformOfTarget(requestedTarget) : hostPlatform()} from source: ` +
        `no Rust toolchain (\`${cargo}\` not found).\n` +
        'Install Rust from https://rustup.rs and run the build again, or use a platform with a prebuilt binary.',
    );
  }
  const target = requestedTarget ?? rustHostTarget(cargo);
  const platform = platformOfTarget(target);
  const linuxGnu = target.includes('-linux-gnu');
  const linuxMusl = target.includes('-linux-musl');
  const env = { ...process.env };
  let subcommand = 'build';
  // a build for this machine only goes to cargo's plain target/release, so it never
  // invalidates the Zig-linked release binaries under target/<triple>/ that share the dir
  let cargoTarget = requestedTarget;
  if ((linuxGnu || linuxMusl) && portable !== 'off') {
    const PATH = zigbuildPath({ setUp: true });
    if (PATH) {
      env.PATH = PATH;
      subcommand = 'zigbuild';
      // glibc 2.17: CentOS/RHEL 7, the oldest glibc a GPU cluster still runs
      cargoTarget = linuxGnu ? `${target}.2.17` : target;
    } else if (portable === 'require' || target !== rustHostTarget(cargo)) {
      fail(`building ${platform} needs cargo-zigbuild and Zig (pip install -r scripts/requirements-build.txt)`);
    } else {
      log(`Zig is not available: this build links against this machine's glibc and will not load on older ones`);
    }
  }
  if (linuxMusl) {
    // a cdylib cannot link musl statically; Node on musl loads it with the system libc
    const key = `CARGO_TARGET_${target.toUpperCase().replaceAll('-', '_')}_RUSTFLAGS`;
    env[key] = `${env[key] ?? ''} -C target-feature=-crt-static`.trim();
  }

  const ownTargetDir = !process.env.CARGO_TARGET_DIR;
  const targetDir = process.env.CARGO_TARGET_DIR ? path.resolve(root, process.env.CARGO_TARGET_DIR) : path.join(root, 'target');
  const cargoArgs = [subcommand, '--release', '--locked', '-p', 'rlprobe-node', ...(cargoTarget ? ['--target', cargoTarget] : [])];
  log(`building the native addon for ${platform} from source: cargo ${cargoArgs.join(' ')} (the first build takes several minutes)…`);
  const started = Date.now();
  const result = spawnSync(cargo, cargoArgs, { cwd: root, stdio: 'inherit', env });
  if (result.error) fail(`could not run ${cargo}: ${result.error.message}`);
  if (result.status !== 0) fail(`building the native addon failed (cargo exited with ${result.status}; its output is above)`);

  const built = path.join(targetDir, ...(cargoTarget ? [target] : []), 'release', libraryName(target));
  const destination = path.join(outDir, `rlprobe.${platform}.node`);
  mkdirSync(outDir, { recursive: true });
  // copy then rename: overwriting a .node in place would corrupt processes that have it mapped
  const staging = `${destination}.tmp-${process.pid}`;
  copyFileSync(built, staging);
  renameSync(staging, destination);
  log(`built ${path.relative(process.cwd(), destination) || destination} in ${Math.round((Date.now() - started) / 1000)} s`);
  if (installedAsDependency && ownTargetDir) {
    // a user's node_modules should not keep cargo's build tree (hundreds of MB)
    rmSync(targetDir, { recursive: true, force: true });
    log(`removed the build directory ${targetDir}`);
  }
}

if (args.target) {
  const known = PREBUILT_PLATFORMS.some((p) => p.target === args.target);
  if (!known) log(`${args.target} is not one of the prebuilt targets; building it anyway`);
  build({ target: args.target, outDir: path.resolve(args.out ?? path.join(root, 'native')), portable: 'require' });
  process.exit(0);
}

if (!args.force && !sourceBuildRequested) {
  const error = await nativeLoadError();
  if (!error) process.exit(0);
  if (installedAsDependency) {
    // the install succeeds; `import 'rlprobe'` throws this same message
    process.stderr.write(`${error.message}\n`);
    process.exit(0);
  }
}
build({
  target: undefined,
  outDir: path.join(root, 'native'),
  portable: installedAsDependency ? 'off' : 'prefer',
});
