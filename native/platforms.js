// The platforms rlprobe ships a prebuilt native addon for, and how this machine is named
// among them. Shared by the loader (native/index.js) and the build script
// (scripts/build-native.mjs) so the two never disagree on a platform's name.
import { readFileSync } from 'node:fs';

/** napi-rs platform suffix → the Rust target it is built for, and what it runs on. */
export const PREBUILT_PLATFORMS = [
  { platform: 'linux-x64-gnu', target: 'x86_64-unknown-linux-gnu', runsOn: 'Linux x64, glibc >= 2.17' },
  { platform: 'linux-arm64-gnu', target: 'aarch64-unknown-linux-gnu', runsOn: 'Linux arm64, glibc >= 2.17' },
  { platform: 'linux-x64-musl', target: 'x86_64-unknown-linux-musl', runsOn: 'Linux x64, musl (Alpine)' },
  { platform: 'darwin-x64', target: 'x86_64-apple-darwin', runsOn: 'macOS Intel' },
  { platform: 'darwin-arm64', target: 'aarch64-apple-darwin', runsOn: 'macOS Apple silicon' },
  { platform: 'win32-x64-msvc', target: 'x86_64-pc-windows-msvc', runsOn: 'Windows x64' },
];

/** The platform suffix of a Rust target triple (cargo-zigbuild's `.2.17` glibc suffix ignored). */
export function platformOfTarget(triple) {
  const target = triple.replace(/\.\d+(\.\d+)*$/, '');
  const known = PREBUILT_PLATFORMS.find((p) => p.target === target);
  if (known) return known.platform;
  const [arch, , os, abi] = target.split('-');
  const nodeArch = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm' }[arch] ?? arch;
  const nodeOs = { linux: 'linux', darwin: 'darwin', windows: 'win32' }[os] ?? os;
  return nodeOs === 'darwin' ? `darwin-${nodeArch}` : `${nodeOs}-${nodeArch}${abi ? `-${abi}` : ''}`;
}

/** Which C library this Linux process runs on: glibc (with its version) or musl. */
export function linuxLibc() {
  try {
    const header = process.report?.getReport?.().header;
    if (header?.glibcVersionRuntime) return { family: 'gnu', version: header.glibcVersionRuntime };
  } catch {
    // process.report can be disabled; fall through to the file check
  }
  try {
    if (readFileSync('/usr/bin/ldd', 'utf8').includes('musl')) return { family: 'musl' };
  } catch {
    // no ldd: assume glibc, the common case on the clusters we target
  }
  return { family: 'gnu' };
}

/** This process's platform suffix, e.g. linux-x64-gnu, darwin-arm64, win32-x64-msvc. */
export function hostPlatform() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${linuxLibc().family}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** One line describing this machine for error messages. */
export function describeHost() {
  const libc = process.platform === 'linux' ? linuxLibc() : undefined;
  const libcText = libc ? `, ${libc.family === 'gnu' ? `glibc ${libc.version ?? '(version unknown)'}` : 'musl'}` : '';
  return `${hostPlatform()} (Node ${process.versions.node}, ${process.platform} ${process.arch}${libcText})`;
}
