/**
 * The ELF reader behind the portable-binary test, checked on real files of this machine
 * against binutils' readelf (an independent reader), plus big-endian and 32-bit objects
 * cross-compiled with Zig when it is available, and clear errors for bad input.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, openSync, readSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { ElfError, compareVersions, highestVersion, readElf, versionsAbove } from './helpers/elf.js';
import type { ElfInfo, VersionNeed } from './helpers/elf.js';
import { ROOT, cleanupTempDirs, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

const LINUX = process.platform === 'linux';
const READELF_OK = spawnSync('readelf', ['--version'], { stdio: 'ignore' }).status === 0;
const NATIVE = path.join(ROOT, 'native', 'rlprobe.linux-x64-gnu.node');
const LIBC = '/lib/x86_64-linux-gnu/libc.so.6';
// A 32-bit i386 executable shipped by valgrind; used only when present.
const I386_FILE = '/usr/libexec/valgrind/getoff-x86-linux';

/** readelf's "Machine:" names for the e_machine values the reader knows. */
const READELF_MACHINES: Record<string, string> = {
  'Advanced Micro Devices X86-64': 'x86_64',
  'Intel 80386': 'i386',
  AArch64: 'aarch64',
  ARM: 'arm',
  PowerPC: 'ppc',
  PowerPC64: 'ppc64',
};

/** What readelf says about the fields the reader returns. */
interface ReadelfView {
  elfClass: number;
  endian: string;
  machine: string;
  needed: string[];
  versionNeeds: { file: string; version: string }[];
  /** 'symbol@VERSION' for every dynamic symbol bound to a needed version, sorted. */
  versionedSymbols: string[];
  hasSymtab: boolean;
}

function runReadelf(args: string[]): string {
  const r = spawnSync('readelf', [...args, '--wide'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, `readelf ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

function readelfView(file: string): ReadelfView {
  const header = runReadelf(['-h', file]);
  const machineName = /^\s*Machine:\s+(.+?)\s*$/m.exec(header)?.[1] ?? '';
  // Only the verneed block: the verdef block also has "Name:" lines.
  const versions = runReadelf(['-V', file]);
  const verneedStart = versions.indexOf('Version needs section');
  const verneed = verneedStart < 0 ? '' : versions.slice(verneedStart).split(/\n\s*\n/)[0];
  const versionNeeds: { file: string; version: string }[] = [];
  const neededIndexes = new Set<string>();
  let current = '';
  for (const line of verneed.split('\n')) {
    const fileMatch = /File: (\S+)\s+Cnt:/.exec(line);
    if (fileMatch) current = fileMatch[1];
    const nameMatch = /Name: (\S+)\s+Flags: .*Version: (\d+)/.exec(line);
    if (nameMatch) {
      versionNeeds.push({ file: current, version: nameMatch[1] });
      neededIndexes.add(nameMatch[2]);
    }
  }
  // "name@VERSION (n)": n is the version index. Matching it against the verneed indexes keeps
  // copy-relocated objects (defined here, versioned by a library) and drops our own verdefs.
  const versionedSymbols = [...runReadelf(['--dyn-syms', file]).matchAll(/\s(\S+?@\S+) \((\d+)\)$/gm)]
    .filter((m) => neededIndexes.has(m[2]))
    .map((m) => m[1])
    .sort();
  return {
    elfClass: Number(/^\s*Class:\s+ELF(32|64)/m.exec(header)?.[1]),
    endian: /^\s*Data:.*\b(little|big) endian/m.exec(header)?.[1] ?? '',
    machine: READELF_MACHINES[machineName] ?? `readelf machine "${machineName}" (add it to READELF_MACHINES)`,
    needed: [...runReadelf(['-d', file]).matchAll(/\(NEEDED\)\s+Shared library: \[(.+)\]/g)].map((m) => m[1]),
    versionNeeds,
    versionedSymbols,
    hasSymtab: /^\s*\[\s*\d+\]\s+\S*\s+SYMTAB\s/m.test(runReadelf(['-S', file])),
  };
}

function readerView(info: ElfInfo): ReadelfView {
  return {
    elfClass: info.elfClass,
    endian: info.endian,
    machine: info.machine,
    needed: info.needed,
    versionNeeds: info.versionNeeds.map(({ file, version }) => ({ file, version })),
    versionedSymbols: info.versionNeeds.flatMap((n) => n.symbols.map((s) => `${s}@${n.version}`)).sort(),
    hasSymtab: info.hasSymtab,
  };
}

/** The highest GLIBC_x.y that readelf lists, ordered by coreutils' `sort -V` rather than by our comparison. */
function highestGlibcBySortV(view: ReadelfView): string | undefined {
  const names = view.versionNeeds.map((n) => n.version).filter((v) => /^GLIBC_\d+(\.\d+)*$/.test(v));
  if (names.length === 0) return undefined;
  const sorted = spawnSync('sort', ['-V'], { input: names.join('\n'), encoding: 'utf8' });
  assert.equal(sorted.status, 0, `sort -V failed: ${sorted.stderr}`);
  return sorted.stdout.trim().split('\n').at(-1);
}

/** Reads `file` with our reader and with readelf and checks they agree field by field. */
function assertAgreesWithReadelf(file: string): ElfInfo {
  const info = readElf(file);
  const expected = readelfView(file);
  assert.deepEqual(readerView(info), expected, `the reader and readelf disagree on ${file}`);
  assert.equal(highestVersion(info.versionNeeds, 'GLIBC_'), highestGlibcBySortV(expected), `highest GLIBC_ version of ${file}`);
  return info;
}

function need(version: string, file = 'libc.so.6'): VersionNeed {
  return { file, version, symbols: [] };
}

describe('version comparison', () => {
  test('dotted versions compare numerically, part by part', () => {
    assert.ok(compareVersions('2.17', '2.34') < 0);
    assert.ok(compareVersions('2.34', '2.17') > 0);
    assert.ok(compareVersions('2.3', '2.3.4') < 0, '2.3 < 2.3.4');
    assert.ok(compareVersions('2.3.4', '2.17') < 0, '2.3.4 < 2.17 (not string order)');
    assert.equal(compareVersions('2.2.5', '2.2.5'), 0);
  });

  test('highestVersion keeps to its prefix and skips non-numeric names', () => {
    const needs = [need('GLIBC_2.2.5'), need('GLIBC_2.3.4'), need('GLIBC_2.17'), need('GLIBC_PRIVATE'), need('GLIBCXX_3.4.30', 'libstdc++.so.6'), need('GCC_4.2.0', 'libgcc_s.so.1')];
    assert.equal(highestVersion(needs, 'GLIBC_'), 'GLIBC_2.17');
    assert.equal(highestVersion(needs, 'GCC_'), 'GCC_4.2.0');
    assert.equal(highestVersion(needs, 'GLIBCXX_'), 'GLIBCXX_3.4.30');
    assert.equal(highestVersion([need('GCC_3.0')], 'GLIBC_'), undefined);
  });

  test('versionsAbove lists exactly the requirements above the limit', () => {
    const needs = [need('GLIBC_2.2.5'), need('GLIBC_2.17'), need('GLIBC_2.18'), need('GLIBC_2.34'), need('GLIBC_PRIVATE')];
    assert.deepEqual(versionsAbove(needs, 'GLIBC_', '2.17').map((n) => n.version), ['GLIBC_2.18', 'GLIBC_2.34']);
    assert.deepEqual(versionsAbove(needs, 'GLIBC_', '2.34'), []);
  });
});

describe('real files, checked against readelf', { skip: !LINUX ? 'ELF files exist only on Linux' : !READELF_OK ? 'readelf (binutils) is not installed' : false }, () => {
  test('the running node binary needs a glibc above 2.17, so the portable check can fail', () => {
    const info = assertAgreesWithReadelf(process.execPath);
    assert.ok(info.needed.includes('libc.so.6'), `node needs libc.so.6: ${info.needed.join(', ')}`);
    const above = versionsAbove(info.versionNeeds, 'GLIBC_', '2.17');
    assert.ok(above.length > 0, `expected ${process.execPath} to need some GLIBC_ version above 2.17`);
    for (const n of above) assert.ok(n.symbols.length > 0, `${n.version} from ${n.file} is used by some symbol`);
  });

  test('libc.so.6 needs only the dynamic loader, and GLIBC_PRIVATE is not a version', { skip: !existsSync(LIBC) && `${LIBC} not present` }, () => {
    const info = assertAgreesWithReadelf(LIBC);
    assert.equal(info.machine, 'x86_64');
    assert.deepEqual(info.needed, ['ld-linux-x86-64.so.2']);
    assert.ok(info.versionNeeds.every((n) => n.file === 'ld-linux-x86-64.so.2'), 'libc requires versions from ld.so only');
    assert.ok(info.versionNeeds.some((n) => n.version === 'GLIBC_PRIVATE'), 'libc uses GLIBC_PRIVATE symbols of ld.so');
    assert.equal(info.hasSymtab, false, 'the distribution libc is stripped');
  });

  test('the local native addon', { skip: !existsSync(NATIVE) && `${NATIVE} not built` }, () => {
    const info = assertAgreesWithReadelf(NATIVE);
    assert.equal(info.machine, 'x86_64');
    assert.equal(info.elfClass, 64);
  });

  test('a 32-bit i386 executable', { skip: !existsSync(I386_FILE) && `${I386_FILE} not present (valgrind)` }, () => {
    const info = assertAgreesWithReadelf(I386_FILE);
    assert.equal(info.elfClass, 32);
    assert.equal(info.machine, 'i386');
  });
});

/** How to run Zig here: $ZIG, `zig` on PATH, or the ziglang package in the project's .venv-build. */
function findZig(): string[] | undefined {
  const candidates = [
    ...(process.env.ZIG ? [[process.env.ZIG]] : []),
    ['zig'],
    [path.join(ROOT, '.venv-build', 'bin', 'python'), '-m', 'ziglang'],
  ];
  return candidates.find(([cmd, ...args]) => spawnSync(cmd, [...args, 'version'], { stdio: 'ignore' }).status === 0);
}

const ZIG = LINUX && READELF_OK ? findZig() : undefined;

describe('cross-compiled objects (big-endian, 32-bit)', { skip: !ZIG && 'needs Linux, readelf and Zig ($ZIG, zig on PATH, or .venv-build with ziglang)' }, () => {
  // clock_gettime and memcpy carry versioned glibc symbols on every target.
  const SOURCE = '#include <string.h>\n#include <time.h>\nlong f(char *a, const char *b, size_t n) { struct timespec t; clock_gettime(0, &t); memcpy(a, b, n); return t.tv_nsec; }\n';
  const TARGETS: { target: string; elfClass: number; endian: string; machine: string }[] = [
    { target: 'powerpc64-linux-gnu.2.17', elfClass: 64, endian: 'big', machine: 'ppc64' },
    { target: 'powerpc-linux-gnueabihf.2.17', elfClass: 32, endian: 'big', machine: 'ppc' },
    { target: 'arm-linux-gnueabihf.2.17', elfClass: 32, endian: 'little', machine: 'arm' },
    { target: 'aarch64-linux-gnu.2.17', elfClass: 64, endian: 'little', machine: 'aarch64' },
  ];

  for (const t of TARGETS) {
    test(`${t.target}: ${t.elfClass}-bit ${t.endian}-endian ${t.machine}`, () => {
      const dir = tempDir('rlprobe-elf-zig-');
      const source = path.join(dir, 'f.c');
      const output = path.join(dir, 'f.so');
      writeFileSync(source, SOURCE);
      const [cmd, ...args] = ZIG!;
      const cc = spawnSync(cmd, [...args, 'cc', '-target', t.target, '-shared', '-fPIC', '-o', output, source], { encoding: 'utf8' });
      assert.equal(cc.status, 0, `zig cc -target ${t.target} failed: ${cc.stderr}`);
      const info = assertAgreesWithReadelf(output);
      assert.deepEqual([info.elfClass, info.endian, info.machine], [t.elfClass, t.endian, t.machine]);
      assert.ok(info.needed.includes('libc.so.6'), `needs libc.so.6: ${info.needed.join(', ')}`);
      // Built against glibc 2.17, so nothing newer may be required.
      assert.deepEqual(versionsAbove(info.versionNeeds, 'GLIBC_', '2.17'), []);
    });
  }
});

describe('bad input gives a clear error naming the file', { skip: !LINUX && 'uses ELF files of this machine' }, () => {
  function assertElfError(file: string, message: RegExp): void {
    assert.throws(
      () => readElf(file),
      (e: unknown) => e instanceof ElfError && e.message.startsWith(`${file}: `) && message.test(e.message),
      `expected an ElfError naming ${file} and matching ${message}`,
    );
  }

  test('a non-ELF file', () => {
    assertElfError(path.join(ROOT, 'package.json'), /not an ELF file \(first bytes 7b0a2020/);
  });

  test('an empty file', () => {
    const file = path.join(tempDir('rlprobe-elf-'), 'empty.so');
    writeFileSync(file, '');
    assertElfError(file, /not an ELF file .*empty/);
  });

  test('a copy cut inside the ELF identification', () => {
    const file = path.join(tempDir('rlprobe-elf-'), 'ident.so');
    const head = Buffer.alloc(10);
    const fd = openSync(process.execPath, 'r');
    readSync(fd, head, 0, head.length, 0);
    closeSync(fd);
    writeFileSync(file, head);
    assertElfError(file, /truncated ELF: 10 bytes/);
  });

  test('a copy cut before its section headers', () => {
    // Section headers sit at the end of the file, so dropping the last bytes loses them.
    const file = path.join(tempDir('rlprobe-elf-'), 'cut.so');
    const source = existsSync(NATIVE) ? NATIVE : process.execPath;
    copyFileSync(source, file);
    const full = statSync(file).size;
    truncateSync(file, full - 100);
    assertElfError(file, new RegExp(`truncated or corrupt ELF: section \\d+ sh_\\w+ needs bytes \\d+\\.\\.\\d+ but the file has ${full - 100} bytes`));
  });
});
