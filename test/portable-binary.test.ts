/**
 * The Linux addons we ship must load on glibc >= 2.17 (RHEL/CentOS 7, Amazon Linux 2, Ubuntu
 * 20.04: where GPU clusters are) and be stripped (size). This reads each binary's version
 * requirements and section table instead of trying to load it on an old system.
 *
 * Checked: the local native/rlprobe.linux-x64-gnu.node, and with RLPROBE_RELEASE_DIR set to a
 * folder of extracted platform packages, every rlprobe.linux-*.node below it.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { compareVersions, highestVersion, readElf, versionsAbove } from './helpers/elf.js';
import { ROOT } from './helpers/fixtures.js';

/** The oldest glibc we promise to run on. */
const GLIBC_FLOOR = '2.17';
const GLIBC = 'GLIBC_';
const NATIVE = path.join(ROOT, 'native', 'rlprobe.linux-x64-gnu.node');

/** e_machine expected from the platform in the file name (rlprobe.linux-x64-gnu.node → x86_64). */
const MACHINE_BY_ARCH: Record<string, string> = { x64: 'x86_64', arm64: 'aarch64' };

function releaseBinaries(dir: string): string[] {
  assert.ok(existsSync(dir), `RLPROBE_RELEASE_DIR=${dir} does not exist`);
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /^rlprobe\.linux-.+\.node$/.test(path.basename(f)))
    .map((f) => path.join(dir, f))
    .sort();
  assert.ok(files.length > 0, `RLPROBE_RELEASE_DIR=${dir} holds no rlprobe.linux-*.node`);
  return files;
}

const onLinuxX64 = process.platform === 'linux' && process.arch === 'x64';
const releaseDir = process.env.RLPROBE_RELEASE_DIR;
const binaries = onLinuxX64 ? [NATIVE, ...(releaseDir ? releaseBinaries(releaseDir) : [])] : [];

describe('portable Linux binaries', { skip: !onLinuxX64 && `checks the linux-x64 build; this is ${process.platform}-${process.arch}` }, () => {
  for (const file of binaries) {
    const name = file.startsWith(ROOT + path.sep) ? path.relative(ROOT, file) : file;
    const platform = /^rlprobe\.(linux-[^.]+)\.node$/.exec(path.basename(file))?.[1] ?? '';
    const [, arch, abi] = platform.split('-');

    describe(name, () => {
      const info = () => {
        assert.ok(existsSync(file), `${file} is missing: build it with node scripts/build-native.mjs`);
        return readElf(file);
      };

      test(`needs no GLIBC_ version above ${GLIBC_FLOOR}`, () => {
        const needs = info().versionNeeds;
        const above = versionsAbove(needs, GLIBC, GLIBC_FLOOR).sort((a, b) => compareVersions(a.version.slice(GLIBC.length), b.version.slice(GLIBC.length)));
        const lines = above.map((n) => `  ${n.version} from ${n.file}: ${n.symbols.join(', ') || '(no symbol names)'}`);
        assert.ok(
          above.length === 0,
          `${name} needs glibc above ${GLIBC_FLOOR} (highest ${highestVersion(needs, GLIBC)}), so it will not load on older systems:\n${lines.join('\n')}\nBuild it with cargo-zigbuild for glibc ${GLIBC_FLOOR} (node scripts/build-native.mjs).`,
        );
      });

      test('is stripped (no .symtab)', () => {
        assert.equal(info().hasSymtab, false, `${name} has a .symtab section: it was not stripped`);
      });

      test(`is an ${MACHINE_BY_ARCH[arch] ?? arch} ${abi} shared object`, () => {
        const elf = info();
        assert.equal(elf.machine, MACHINE_BY_ARCH[arch], `${name}: machine of a ${platform} binary`);
        if (abi === 'gnu') assert.ok(elf.needed.includes('libc.so.6'), `${name} should need libc.so.6, needs: ${elf.needed.join(', ')}`);
      });
    });
  }
});
