#!/usr/bin/env node
// Makes sure a native addon for this platform is present: a prebuilt one (the
// `rlprobe-<platform>` package npm installed, or native/rlprobe.<platform>.node) is used as
// is; otherwise the addon is built from source with cargo (release profile) and copied to
// native/. Runs as the package's `install` script, so `npm ci` on a fresh clone builds it.
//   --force    rebuild even when a binary exists
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const force = process.argv.includes('--force');

function isMusl() {
  if (process.platform !== 'linux') return false;
  try {
    return !process.report.getReport().header.glibcVersionRuntime;
  } catch {
    return false;
  }
}

/** napi-rs's platform suffix, e.g. linux-x64-gnu, darwin-arm64, win32-x64-msvc. */
function platformSuffix() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

const suffix = platformSuffix();
const target = path.join(root, 'native', `rlprobe.${suffix}.node`);

function prebuiltPackageLoads() {
  try {
    const require = createRequire(path.join(root, 'package.json'));
    require(`rlprobe-${suffix}`);
    return true;
  } catch {
    return false;
  }
}

if (!force && (existsSync(target) || prebuiltPackageLoads())) {
  console.log(`rlprobe: using the prebuilt native addon for ${suffix}`);
  process.exit(0);
}

const cargo = process.env.CARGO ?? 'cargo';
const probe = spawnSync(cargo, ['--version'], { stdio: 'ignore' });
if (probe.status !== 0) {
  console.error(
    `rlprobe: no prebuilt native addon for ${suffix}, and no Rust toolchain to build one.\n` +
      'Install Rust (https://rustup.rs) and reinstall, or use a platform with a prebuilt binary.',
  );
  process.exit(1);
}

console.log(`rlprobe: building the native addon for ${suffix} from source (cargo build --release)…`);
const build = spawnSync(cargo, ['build', '--release', '--locked', '-p', 'rlprobe-node'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) {
  console.error('rlprobe: building the native addon failed (see cargo output above)');
  process.exit(build.status ?? 1);
}

const targetDir = process.env.CARGO_TARGET_DIR ? path.resolve(root, process.env.CARGO_TARGET_DIR) : path.join(root, 'target');
const library =
  process.platform === 'win32' ? 'rlprobe_node.dll' : process.platform === 'darwin' ? 'librlprobe_node.dylib' : 'librlprobe_node.so';
mkdirSync(path.dirname(target), { recursive: true });
// copy then rename: overwriting a .node file in place would corrupt processes that have it mapped
const staging = `${target}.tmp-${process.pid}`;
copyFileSync(path.join(targetDir, 'release', library), staging);
renameSync(staging, target);
console.log(`rlprobe: built ${path.relative(root, target)}`);
