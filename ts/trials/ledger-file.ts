/**
 * The full ledger of a capture whose `capture.json` lists only part of it: `ledger.jsonl`
 * beside the manifest, one entry per line, sorted by path. Written (durably) before the
 * manifest, removed when a later capture of the trial lists every entry itself. Readers
 * that need every entry (the collected files, `probe trial show --files`) read it line by
 * line, so its size is bounded only by the disk.
 */
import { closeSync, openSync, readSync, rmSync } from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';

import { RlprobeError } from '../errors.js';
import type { Ledger, LedgerEntry } from './ledger.js';
import { writeDurable } from './verified-copy.js';

export const LEDGER_FILE = 'ledger.jsonl';

/** Writes every entry to `<captureDir>/ledger.jsonl` when `ledger` omits any; else removes a stale one. */
export function writeLedgerFile(captureDir: string, ledger: Ledger, entries: readonly LedgerEntry[]): void {
  const file = path.join(captureDir, LEDGER_FILE);
  if (ledger.entries_file === null) {
    rmSync(file, { force: true });
    return;
  }
  writeDurable(file, entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
}

/** Lines of a file, read in chunks (the file may be larger than a string can hold). */
function* lines(file: string): Generator<string> {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    // a character split between two chunks is joined, not replaced
    const utf8 = new StringDecoder('utf8');
    let rest = '';
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const text = rest + utf8.write(buf.subarray(0, n));
      const parts = text.split('\n');
      rest = parts.pop() ?? '';
      yield* parts;
    }
    rest += utf8.end();
    if (rest !== '') yield rest;
  } finally {
    closeSync(fd);
  }
}

/**
 * Every ledger entry of the capture at `captureDir` whose manifest holds `ledger`: its own
 * entries when it lists them all, else those of `ledger.jsonl`, one by one.
 */
export function* allLedgerEntries(captureDir: string, ledger: Ledger): Generator<LedgerEntry> {
  if (!ledger.entries_file) {
    yield* ledger.entries;
    return;
  }
  const file = path.join(captureDir, LEDGER_FILE);
  let n = 0;
  try {
    for (const line of lines(file)) {
      n++;
      if (line.trim() === '') continue;
      yield JSON.parse(line) as LedgerEntry;
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'RLPROBE_NOT_FOUND' : 'RLPROBE_BAD_MANIFEST';
    throw new RlprobeError(code, `${file}${n > 0 ? ` line ${n}` : ''}: ${(e as Error).message} (capture.json lists ${ledger.entries.length} of ${ledger.total} entries; the rest are in this file)`);
  }
}
