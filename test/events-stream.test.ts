/**
 * events.jsonl is streamed, never loaded whole: every chunk size reads the same events as a
 * whole-file parse (lines split inside multi-byte characters, torn last lines, blank and
 * garbage lines), an overlong line is skipped and counted without being held, and a file
 * larger than V8's longest string (0x1fffffe8 characters) reads with bounded memory.
 */
import assert from 'node:assert/strict';
import { closeSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { Recorder, RunReader } from '../ts/index.js';
import type { RunEvent } from '../ts/index.js';
import { MAX_EVENT_LINE_BYTES, fileLines, readEventsFile, readEventsFrom, streamEventsFile } from '../ts/reader/events-file.js';
import { RunEventSchema } from '../ts/schema/event.js';
import { spawnChild, waitForExit } from './helpers/child.js';
import { QUIET } from './helpers/fixtures.js';
import { openRun, tempRunDir } from './helpers/run-dir.js';

function line(kind: string, timestamp: number, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ timestamp, kind, step: null, rank: 0, message: `m ${kind}`, data: extra });
}

/** The reference: the whole file split on newlines, as the reader did before streaming. */
function parseWhole(text: string): { events: RunEvent[]; skippedLines: number } {
  const events: RunEvent[] = [];
  let skippedLines = 0;
  for (const l of text.split('\n')) {
    if (l.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(l);
    } catch {
      skippedLines++;
      continue;
    }
    const ok = RunEventSchema.safeParse(parsed);
    if (ok.success) events.push(ok.data);
    else skippedLines++;
  }
  return { events, skippedLines };
}

const CONTENT = [
  line('ascii', 1),
  line('ünïcödé', 2, { text: '日本語のテキスト', emoji: '🙂🚀', mixed: 'aé日🙂' }),
  '',
  '   ',
  `${line('crlf', 3)}\r`,
  'not json at all',
  '{"kind":"no timestamp"}',
  line('after-garbage', 4, { long: 'é'.repeat(5000) }),
  // torn: the writer died mid-line
  line('torn', 5).slice(0, 30),
].join('\n');

describe('streaming events.jsonl', () => {
  test('every chunk size reads what a whole-file parse reads', (t) => {
    const dir = tempRunDir(t, 'events-chunks');
    const file = path.join(dir, 'events.jsonl');
    writeFileSync(file, CONTENT);
    const want = parseWhole(CONTENT);
    assert.equal(want.events.length, 4);
    assert.equal(want.skippedLines, 3);
    for (const chunkBytes of [1, 2, 3, 5, 7, 64, 4096, 1 << 20]) {
      const diagnostics = { skippedLines: 0 };
      const got = [...streamEventsFile(file, { chunkBytes, diagnostics })];
      assert.deepEqual(got, want.events, `chunk of ${chunkBytes} bytes`);
      assert.equal(diagnostics.skippedLines, want.skippedLines, `skipped lines, chunk of ${chunkBytes} bytes`);
    }
  });

  test('a last line without a newline is read when it is complete', (t) => {
    const dir = tempRunDir(t, 'events-last');
    const file = path.join(dir, 'events.jsonl');
    writeFileSync(file, `${line('a', 1)}\n${line('b', 2)}`);
    for (const chunkBytes of [1, 7, 1 << 20]) {
      assert.deepEqual([...streamEventsFile(file, { chunkBytes })].map((e) => e.kind), ['a', 'b'], `chunk of ${chunkBytes}`);
    }
    assert.deepEqual([...fileLines(path.join(dir, 'missing.jsonl'))], [], 'a missing file has no lines');
  });

  test('a line over the limit is skipped and counted, its neighbours read', (t) => {
    const dir = tempRunDir(t, 'events-overlong');
    const file = path.join(dir, 'events.jsonl');
    const overlong = line('overlong', 2, { blob: 'x'.repeat(MAX_EVENT_LINE_BYTES) });
    writeFileSync(file, [line('before', 1), overlong, line('after', 3), overlong].join('\n'));
    for (const chunkBytes of [4096, 1 << 20]) {
      const r = { skippedLines: 0 };
      assert.deepEqual([...streamEventsFile(file, { chunkBytes, diagnostics: r })].map((e) => e.kind), ['before', 'after']);
      assert.equal(r.skippedLines, 2, 'the overlong lines, torn or not');
    }
  });

  test('readEventsFile keeps what the filter keeps, and the last N', (t) => {
    const dir = tempRunDir(t, 'events-filter');
    const file = path.join(dir, 'events.jsonl');
    const lines: string[] = [];
    for (let i = 0; i < 5000; i++) lines.push(line(i % 10 === 0 ? 'rare' : 'common', i, { i }));
    writeFileSync(file, `${lines.join('\n')}\n`);
    const rare = readEventsFile(file, undefined, (e) => e.kind === 'rare');
    assert.equal(rare.events.length, 500);
    assert.ok(rare.events.every((e) => e.kind === 'rare'));
    const last = readEventsFile(file, undefined, undefined, 3);
    assert.deepEqual(last.events.map((e) => e.data.i), [4997, 4998, 4999]);
    assert.deepEqual(readEventsFile(file, undefined, undefined, 0).events, []);
  });
});

describe('following events.jsonl from an offset', () => {
  test('complete lines only, in any chunk size; a torn line waits for its newline; a shorter or other file starts again', (t) => {
    const dir = tempRunDir(t);
    const file = path.join(dir, 'events.jsonl');
    const a = line('a', 1, { text: 'ünï ✓' });
    const b = line('b', 2);
    writeFileSync(file, `${a}\n\nnot json\n${b.slice(0, 20)}`);
    for (const chunkBytes of [1, 3, 7, 64, 1 << 20]) {
      const first = readEventsFrom(file, 0, { chunkBytes });
      assert.deepEqual(first.events.map((e) => e.kind), ['a'], `chunk ${chunkBytes}`);
      assert.equal(first.events[0].data.text, 'ünï ✓');
      assert.equal(first.skippedLines, 1, 'the garbage line');
      assert.equal(first.next, Buffer.byteLength(`${a}\n\nnot json\n`), 'the torn line is not consumed');
    }
    const first = readEventsFrom(file, 0);
    writeFileSync(file, `${a}\n\nnot json\n${b}\n${line('c', 3)}\n`);
    const second = readEventsFrom(file, first.next, { ino: first.ino, chunkBytes: 5 });
    assert.deepEqual(second.events.map((e) => e.kind), ['b', 'c']);
    assert.equal(second.restarted, false);
    assert.equal(second.next, statSync(file).size);
    const none = readEventsFrom(file, second.next, { ino: second.ino });
    assert.deepEqual([none.events.length, none.next], [0, second.next]);
    // replaced by a shorter file: read from its start
    writeFileSync(file, `${line('d', 4)}\n`);
    const again = readEventsFrom(file, second.next, { ino: second.ino });
    assert.equal(again.restarted, true);
    assert.deepEqual(again.events.map((e) => e.kind), ['d']);
    // replaced by another file at least as long (another inode): read from its start too
    const other = path.join(dir, 'other.jsonl');
    writeFileSync(other, `${line('e', 5)}\n${line('f', 6)}\n`);
    rmSync(file);
    writeFileSync(file, `${line('e', 5)}\n${line('f', 6)}\n`);
    const replaced = readEventsFrom(file, again.next, { ino: again.ino });
    assert.equal(replaced.restarted, replaced.ino !== again.ino);
    if (replaced.restarted) assert.deepEqual(replaced.events.map((e) => e.kind), ['e', 'f']);
    // no file yet: nothing, from 0
    assert.deepEqual(readEventsFrom(path.join(dir, 'none.jsonl'), 0).events, []);
  });

  test('maxBytes bounds one read: a backlog is read over several, chained they read what one read reads', (t) => {
    const dir = tempRunDir(t);
    const file = path.join(dir, 'events.jsonl');
    const lines = Array.from({ length: 200 }, (_, i) => line(`k${i}`, i, { pad: 'x'.repeat(i % 37) }));
    writeFileSync(file, `${lines.join('\n')}\n`);
    const whole = readEventsFrom(file, 0).events.map((e) => e.kind);
    assert.equal(whole.length, 200);
    let at = 0;
    let reads = 0;
    const chained: string[] = [];
    for (;;) {
      const r = readEventsFrom(file, at, { maxBytes: 1000, chunkBytes: 300 });
      reads++;
      chained.push(...r.events.map((e) => e.kind));
      assert.ok(r.next - at <= 1000 + 300, `one read went ${r.next - at} bytes`);
      at = r.next;
      if (r.next >= r.size) break;
      assert.ok(reads < 1000);
    }
    assert.deepEqual(chained, whole);
    assert.ok(reads > 10, `${reads} reads`);
  });

  test('RunReader.eventsFrom tails a recording as it writes', (t) => {
    const dir = path.join(tempRunDir(t), 'run');
    const rec = new Recorder(dir, QUIET);
    const reader = RunReader.open(dir);
    const first = reader.eventsFrom(0);
    rec.logEvent('checkpoint', { message: 'saved', step: 3 });
    rec.flushSync();
    const next = reader.eventsFrom(first.next, first.ino);
    assert.deepEqual(next.events.map((e) => e.kind), ['checkpoint']);
    rec.close();
    const end = reader.eventsFrom(next.next, next.ino);
    assert.ok(end.events.some((e) => e.kind === 'recorder_close'), end.events.map((e) => e.kind).join());
  });
});

describe('RunReader events: queries and the stream', () => {
  test('kinds and last filter; streamEvents merges the ranks by time like events()', (t) => {
    const { dir, rec } = openRun(t, 'events-query');
    rec.close();
    new Recorder(dir, { rank: 1, recordAllRanks: true, installHandlers: false, captureEnvironment: false }).close();
    const rankDir = path.join(dir, 'rank-001');
    const main: string[] = [];
    const ranked: string[] = [];
    for (let i = 0; i < 50; i++) {
      main.push(line(i % 5 === 0 ? 'ckpt' : 'note', 1000 + 2 * i, { i }));
      ranked.push(JSON.stringify({ timestamp: 1001 + 2 * i, kind: 'rank_note', step: null, rank: 1, message: '', data: { i } }));
    }
    writeFileSync(path.join(dir, 'events.jsonl'), `${main.join('\n')}\nnot json\n`);
    writeFileSync(path.join(rankDir, 'events.jsonl'), `${ranked.join('\n')}\n`);
    const reader = RunReader.open(dir);
    const all = reader.eventsWithDiagnostics();
    assert.equal(all.events.length, 100);
    assert.equal(all.skippedLines, 1);
    assert.deepEqual(all.events.map((e) => e.timestamp), all.events.map((e) => e.timestamp).sort((a, b) => a - b));

    assert.deepEqual(reader.events({ kinds: ['ckpt'] }).map((e) => e.data.i), [0, 5, 10, 15, 20, 25, 30, 35, 40, 45]);
    const both = all.events.filter((e) => e.kind === 'ckpt' || e.kind === 'rank_note');
    assert.deepEqual(reader.events({ kinds: ['ckpt', 'rank_note'], last: 7 }), both.slice(-7));
    assert.ok(reader.events({ kinds: ['ckpt', 'rank_note'], last: 7 }).some((e) => e.kind === 'ckpt'), 'the last 7 span both ranks');
    assert.deepEqual(reader.events({ last: 2 }).map((e) => [e.kind, e.data.i]), [['note', 49], ['rank_note', 49]]);
    assert.deepEqual(reader.events({ last: 0 }), []);
    assert.throws(() => reader.events({ last: -1 }), /invalid event query last/);

    const diagnostics = { skippedLines: 0 };
    assert.deepEqual([...reader.streamEvents({}, diagnostics)], all.events, 'the stream is events() in the same order');
    assert.equal(diagnostics.skippedLines, 1);
    assert.deepEqual([...reader.streamEvents({ kinds: ['rank_note'] })].length, 50);
  });
});

describe('an events.jsonl larger than the longest string V8 can make', () => {
  const V8_MAX_STRING = 0x1fffffe8;
  const PEAK_RSS_MB = 400;

  test(`reads in bounded memory (peak RSS under ${PEAK_RSS_MB} MB)`, { timeout: 120_000 }, async (t) => {
    const { dir, rec } = openRun(t, 'events-huge');
    rec.close();
    // 100 lines of ~60 KB (the recorder's data limit is 64 KiB), repeated past the limit
    const pad = 'p'.repeat(60_000);
    const block = Buffer.from(
      `${Array.from({ length: 100 }, (_, i) => line(i === 50 ? 'rare' : 'bulk', 1e9 + i, { pad })).join('\n')}\n`,
    );
    const file = path.join(dir, 'events.jsonl');
    const fd = openSync(file, 'w');
    let bytes = 0;
    let blocks = 0;
    try {
      while (bytes <= V8_MAX_STRING) {
        writeSync(fd, block);
        bytes += block.length;
        blocks++;
      }
      writeSync(fd, 'torn {"timestamp":');
    } finally {
      closeSync(fd);
    }
    t.after(() => rmSync(file, { force: true }));
    assert.ok(statSync(file).size > V8_MAX_STRING);

    const child = spawnChild('read-events.ts', [dir, 'rare']);
    const exit = await waitForExit(child, 110_000);
    assert.deepEqual(exit, { code: 0, signal: null }, child.describe());
    const out = JSON.parse(child.lines.at(-1)!) as { picked: unknown[]; pickedSkipped: number; streamed: number; streamSkipped: number; maxRssMb: number };
    assert.equal(out.picked.length, blocks, 'one rare event a block');
    assert.equal(out.pickedSkipped, 1, 'the torn last line');
    assert.equal(out.streamed, blocks * 100);
    assert.equal(out.streamSkipped, 1);
    t.diagnostic(`${(bytes / 1e6).toFixed(0)} MB of events: peak RSS ${out.maxRssMb} MB`);
    assert.ok(out.maxRssMb < PEAK_RSS_MB, `peak RSS ${out.maxRssMb} MB`);
  });
});
