/**
 * A small ELF reader for tests: what a shared object needs from the system it is loaded on
 * (DT_NEEDED libraries, symbol versions from .gnu.version_r) and whether it was stripped.
 *
 * Sections are found by type, not by name, so the reader does not depend on .shstrtab.
 * Every read is bounds-checked: a truncated file fails with an error naming the file.
 */
import { readFileSync } from 'node:fs';

// Section types (ELF gABI and the GNU extensions).
const SHT_SYMTAB = 2;
const SHT_DYNAMIC = 6;
const SHT_DYNSYM = 11;
const SHT_GNU_VERNEED = 0x6ffffffe;
const SHT_GNU_VERSYM = 0x6fffffff;
const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);
const DT_NULL = 0;
const DT_NEEDED = 1;

/** e_machine values for the targets we ship, plus a few so other files get a readable name. */
const MACHINES: Record<number, string> = {
  3: 'i386',
  8: 'mips',
  20: 'ppc',
  21: 'ppc64',
  22: 's390',
  40: 'arm',
  62: 'x86_64',
  183: 'aarch64',
  243: 'riscv',
  258: 'loongarch',
};

/** One version a file requires from one needed library, and the dynamic symbols bound to it. */
export interface VersionNeed {
  /** The needed library, e.g. libc.so.6. */
  file: string;
  /** The version name, e.g. GLIBC_2.14 or GCC_3.0. */
  version: string;
  /** Names of the dynamic symbols that require this version (empty if there is no .gnu.version). */
  symbols: string[];
}

export interface ElfInfo {
  path: string;
  elfClass: 32 | 64;
  endian: 'little' | 'big';
  /** 'x86_64', 'aarch64', … or 'unknown(0x…)'. */
  machine: string;
  /** DT_NEEDED entries, in file order. */
  needed: string[];
  /** Entries of .gnu.version_r, in file order. */
  versionNeeds: VersionNeed[];
  /** True when a SHT_SYMTAB section is present, i.e. the file is not stripped. */
  hasSymtab: boolean;
}

export class ElfError extends Error {
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}`);
    this.name = 'ElfError';
  }
}

interface Section {
  type: number;
  offset: number;
  size: number;
  link: number;
  info: number;
  entsize: number;
}

/** Bounds-checked reads in the file's byte order and word size. */
class Cursor {
  constructor(
    private readonly buf: Buffer,
    private readonly file: string,
    readonly is64: boolean,
    private readonly little: boolean,
  ) {}

  private check(offset: number, length: number, what: string): void {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + length > this.buf.length) {
      throw new ElfError(this.file, `truncated or corrupt ELF: ${what} needs bytes ${offset}..${offset + length} but the file has ${this.buf.length} bytes`);
    }
  }

  u16(offset: number, what: string): number {
    this.check(offset, 2, what);
    return this.little ? this.buf.readUInt16LE(offset) : this.buf.readUInt16BE(offset);
  }

  u32(offset: number, what: string): number {
    this.check(offset, 4, what);
    return this.little ? this.buf.readUInt32LE(offset) : this.buf.readUInt32BE(offset);
  }

  /** An address-sized field (Elf32_Off / Elf64_Off and friends). */
  word(offset: number, what: string): number {
    if (!this.is64) return this.u32(offset, what);
    this.check(offset, 8, what);
    const value = this.little ? this.buf.readBigUInt64LE(offset) : this.buf.readBigUInt64BE(offset);
    // Offsets and sizes beyond 2^53 cannot be real in a file we could read into memory.
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new ElfError(this.file, `corrupt ELF: ${what} is ${value}`);
    return Number(value);
  }

  /** A NUL-terminated string at `index` inside the string table `table`. */
  string(table: Section, index: number, what: string): string {
    const start = table.offset + index;
    const end = table.offset + table.size;
    this.check(table.offset, table.size, `string table for ${what}`);
    const nul = this.buf.indexOf(0, start);
    if (index >= table.size || nul < 0 || nul >= end) {
      throw new ElfError(this.file, `corrupt ELF: ${what} string at index ${index} is not terminated inside its string table`);
    }
    return this.buf.toString('latin1', start, nul);
  }
}

function readSections(c: Cursor, file: string): Section[] {
  const shoff = c.word(c.is64 ? 0x28 : 0x20, 'e_shoff');
  const shentsize = c.u16(c.is64 ? 0x3a : 0x2e, 'e_shentsize');
  let shnum = c.u16(c.is64 ? 0x3c : 0x30, 'e_shnum');
  if (shoff === 0) throw new ElfError(file, 'ELF file has no section headers (cannot find .dynamic or .gnu.version_r)');
  const at = (i: number, field64: number, field32: number, what: string, wide: boolean): number => {
    const base = shoff + i * shentsize;
    const field = c.is64 ? field64 : field32;
    return wide ? c.word(base + field, `section ${i} ${what}`) : c.u32(base + field, `section ${i} ${what}`);
  };
  // With 0xff00 or more sections, e_shnum is 0 and the real count is in section 0's sh_size.
  if (shnum === 0) shnum = at(0, 32, 20, 'sh_size', true);
  const sections: Section[] = [];
  for (let i = 0; i < shnum; i++) {
    sections.push({
      type: at(i, 4, 4, 'sh_type', false),
      offset: at(i, 24, 16, 'sh_offset', true),
      size: at(i, 32, 20, 'sh_size', true),
      link: at(i, 40, 24, 'sh_link', false),
      info: at(i, 44, 28, 'sh_info', false),
      entsize: at(i, 56, 36, 'sh_entsize', true),
    });
  }
  return sections;
}

function linked(sections: Section[], s: Section, file: string, what: string): Section {
  const target = sections[s.link];
  if (!target) throw new ElfError(file, `corrupt ELF: ${what} links to missing section ${s.link}`);
  return target;
}

function readNeeded(c: Cursor, sections: Section[], file: string): string[] {
  const dynamic = sections.find((s) => s.type === SHT_DYNAMIC);
  if (!dynamic) return [];
  const strings = linked(sections, dynamic, file, '.dynamic');
  const entrySize = c.is64 ? 16 : 8;
  const needed: string[] = [];
  for (let at = dynamic.offset; at + entrySize <= dynamic.offset + dynamic.size; at += entrySize) {
    const tag = c.word(at, '.dynamic d_tag');
    if (tag === DT_NULL) break;
    if (tag === DT_NEEDED) needed.push(c.string(strings, c.word(at + entrySize / 2, '.dynamic d_val'), 'DT_NEEDED'));
  }
  return needed;
}

/** Maps each version index (vna_other) to the dynamic symbol names that use it. */
function symbolsByVersionIndex(c: Cursor, sections: Section[], file: string): Map<number, string[]> {
  const byIndex = new Map<number, string[]>();
  const versym = sections.find((s) => s.type === SHT_GNU_VERSYM);
  const dynsym = sections.find((s) => s.type === SHT_DYNSYM);
  if (!versym || !dynsym) return byIndex;
  const names = linked(sections, dynsym, file, '.dynsym');
  const symSize = dynsym.entsize || (c.is64 ? 24 : 16);
  const count = Math.min(versym.size / 2, dynsym.size / symSize);
  for (let i = 1; i < count; i++) {
    // The top bit marks a hidden version; the index is in the low 15 bits.
    const index = c.u16(versym.offset + i * 2, '.gnu.version entry') & 0x7fff;
    const name = c.string(names, c.u32(dynsym.offset + i * symSize, '.dynsym st_name'), '.dynsym');
    const list = byIndex.get(index) ?? [];
    list.push(name);
    byIndex.set(index, list);
  }
  return byIndex;
}

function readVersionNeeds(c: Cursor, sections: Section[], file: string): VersionNeed[] {
  const verneed = sections.find((s) => s.type === SHT_GNU_VERNEED);
  if (!verneed) return [];
  const strings = linked(sections, verneed, file, '.gnu.version_r');
  const symbols = symbolsByVersionIndex(c, sections, file);
  const needs: VersionNeed[] = [];
  // sh_info holds the number of Elf_Verneed entries; entries and their aux lists are chained by
  // relative offsets, which need not follow file order (the native .node interleaves them).
  let entry = verneed.offset;
  for (let n = 0; n < verneed.info; n++) {
    const count = c.u16(entry + 2, 'vn_cnt');
    const needFile = c.string(strings, c.u32(entry + 4, 'vn_file'), 'vn_file');
    let aux = entry + c.u32(entry + 8, 'vn_aux');
    for (let k = 0; k < count; k++) {
      const index = c.u16(aux + 6, 'vna_other');
      const version = c.string(strings, c.u32(aux + 8, 'vna_name'), 'vna_name');
      needs.push({ file: needFile, version, symbols: symbols.get(index) ?? [] });
      aux += c.u32(aux + 12, 'vna_next');
    }
    entry += c.u32(entry + 12, 'vn_next');
  }
  return needs;
}

/** Parses an ELF image already in memory; `file` is only used in error messages. */
export function parseElf(buf: Buffer, file: string): ElfInfo {
  const head = buf.subarray(0, 4);
  if (head.length === 0 || !head.equals(ELF_MAGIC.subarray(0, head.length))) {
    throw new ElfError(file, `not an ELF file (first bytes ${head.toString('hex') || 'missing: the file is empty'}, expected 7f454c46)`);
  }
  if (buf.length < 16) throw new ElfError(file, `truncated ELF: ${buf.length} bytes, too short for the 16-byte ELF identification`);
  const elfClass = buf[4];
  const data = buf[5];
  if (elfClass !== 1 && elfClass !== 2) throw new ElfError(file, `unknown ELF class ${elfClass}`);
  if (data !== 1 && data !== 2) throw new ElfError(file, `unknown ELF data encoding ${data}`);
  const c = new Cursor(buf, file, elfClass === 2, data === 1);
  const machineCode = c.u16(18, 'e_machine');
  const sections = readSections(c, file);
  return {
    path: file,
    elfClass: elfClass === 2 ? 64 : 32,
    endian: data === 1 ? 'little' : 'big',
    machine: MACHINES[machineCode] ?? `unknown(0x${machineCode.toString(16)})`,
    needed: readNeeded(c, sections, file),
    versionNeeds: readVersionNeeds(c, sections, file),
    hasSymtab: sections.some((s) => s.type === SHT_SYMTAB),
  };
}

export function readElf(file: string): ElfInfo {
  return parseElf(readFileSync(file), file);
}

/** Compares dotted numeric versions: 2.17 < 2.34, 2.3 < 2.3.4 < 2.17. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** The numeric part of `prefix`-versions ('GLIBC_2.34' → '2.34'); names like GLIBC_PRIVATE are skipped. */
function numericVersions(needs: VersionNeed[], prefix: string): VersionNeed[] {
  return needs.filter((n) => n.version.startsWith(prefix) && /^\d+(\.\d+)*$/.test(n.version.slice(prefix.length)));
}

/** The highest required version with this prefix, e.g. 'GLIBC_2.34', or undefined when none is required. */
export function highestVersion(needs: VersionNeed[], prefix: string): string | undefined {
  let best: string | undefined;
  for (const n of numericVersions(needs, prefix)) {
    if (best === undefined || compareVersions(n.version.slice(prefix.length), best.slice(prefix.length)) > 0) best = n.version;
  }
  return best;
}

/** Requirements with this prefix whose version is above `limit` (e.g. 'GLIBC_', '2.17'). */
export function versionsAbove(needs: VersionNeed[], prefix: string, limit: string): VersionNeed[] {
  return numericVersions(needs, prefix).filter((n) => compareVersions(n.version.slice(prefix.length), limit) > 0);
}
