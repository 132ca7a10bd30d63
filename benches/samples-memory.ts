/**
 * Long texts must not blow up memory: peak RSS while recording 100,000 samples of 8 KB
 * (select: false, so every byte is written), and 2,000 samples with 100 KB completions,
 * then while streaming them back. Each case runs in a fresh child process, so each
 * peak is its own. Texts are random slices of 32 MB of random words (the baseline RSS
 * includes that corpus).
 *
 *   npm run bench:samples-memory
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { processPeakRssMiB } from '../dist/bench/scale.js';
import { Recorder, RunReader } from '../dist/index.js';

const MiB = 1024 * 1024;
// VmHWM on Linux: a child's ru_maxrss would include its parent's peak at fork time
const rssMiB = processPeakRssMiB;

function dirBytes(p: string): number {
  const st = statSync(p);
  return st.isFile() ? st.size : readdirSync(p).reduce((a, n) => a + dirBytes(path.join(p, n)), 0);
}

const WORDS = (
  'the of and to in is that for it as with was on be by this are or from at an which we can not have if then so let ' +
  'sum proof answer step therefore because equation value number function return def import class self print loop ' +
  'while true false none error check result compute total each list matrix vector gradient token reward policy'
).split(' ');

/**
 * 32 MB of random words: each sample is a random slice of it, so zstd (a 2 MB window at
 * level 3) sees text about as repetitive as prose, not one string repeated. Built as bytes
 * (one flat string, no garbage), so the baseline RSS stays small.
 */
function corpus(): string {
  const out = Buffer.allocUnsafe(32 * MiB);
  const words = WORDS.map((w) => Buffer.from(`${w} `, 'latin1'));
  let x = 12345;
  let n = 0;
  while (n < out.length - 32) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const w = words[x % words.length];
    w.copy(out, n);
    n += w.length;
    if ((x >>> 20) % 13 === 0) out[n - 1] = 10; // a line break now and then
  }
  return out.toString('latin1', 0, n);
}

/** `count` samples of `bytes` each, `perCall` per logSamples; flushSync every `paceCalls` calls (0: never). */
function record(dir: string, count: number, bytes: number, perCall: number, paceCalls: number) {
  const text = corpus();
  let seed = 7;
  const slice = (n: number): string => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    const at = seed % (text.length - n);
    return text.slice(at, at + n);
  };
  const before = rssMiB();
  const t0 = performance.now();
  const rec = new Recorder(dir, { installHandlers: false, captureEnvironment: false });
  let calls = 0;
  for (let done = 0; done < count; done += perCall) {
    const batch = Array.from({ length: Math.min(perCall, count - done) }, (_, i) => ({
      completion_text: `${(done + i).toString().padStart(12, '0')} ${slice(bytes - 13)}`,
      prompt_text: 'Solve the following problem step by step.',
      reward_total: Math.random(),
      completion_len: bytes >> 2,
    }));
    rec.logSamples(batch, { step: calls, select: false });
    if (paceCalls > 0 && ++calls % paceCalls === 0) rec.flushSync(60_000);
    else if (paceCalls === 0) calls++;
  }
  const summary = rec.close();
  const seconds = (performance.now() - t0) / 1000;
  const c = summary.counters;
  return {
    samples: count,
    sampleBytes: bytes,
    written: c.samplesWritten,
    dropped: c.samplesDropped,
    seconds,
    inputMiB: (count * bytes) / MiB,
    onDiskMiB: dirBytes(path.join(dir, 'samples')) / MiB,
    rssBeforeMiB: before,
    peakRssMiB: rssMiB(),
  };
}

function scan(dir: string) {
  const before = rssMiB();
  const t0 = performance.now();
  let n = 0;
  let chars = 0;
  for (const s of RunReader.open(dir).samples()) {
    n++;
    chars += s.completion_text?.length ?? 0;
  }
  return { read: n, chars, seconds: (performance.now() - t0) / 1000, rssBeforeMiB: before, peakRssMiB: rssMiB() };
}

const mode = process.argv[2];
if (mode === 'child') {
  const [, , , kind, count, bytes, perCall, pace] = process.argv;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-samples-mem-'));
  try {
    const w = record(dir, Number(count), Number(bytes), Number(perCall), Number(pace));
    process.stdout.write(`${JSON.stringify({ kind, write: w })}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else if (mode === 'scan-child') {
  const [, , , count, bytes] = process.argv;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-samples-scan-'));
  try {
    // write in a child of its own first, so this process's peak is the scan's
    const w = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), 'write-only', dir, count, bytes], { encoding: 'utf8' });
    if (w.status !== 0) throw new Error(w.stderr);
    process.stdout.write(`${JSON.stringify({ kind: 'scan', scan: scan(dir) })}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else if (mode === 'write-only') {
  const [, , , dir, count, bytes] = process.argv;
  record(dir, Number(count), Number(bytes), 100, 100);
} else {
  const run = (args: string[]) => {
    const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...args], { encoding: 'utf8', maxBuffer: 16 * MiB });
    if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
  };
  const cases = [
    ['child', '8KB as fast as possible', '100000', '8192', '100', '0'],
    ['child', '8KB paced (flushSync every 100 calls)', '100000', '8192', '100', '100'],
    ['child', '100KB completions', '2000', '102400', '8', '0'],
  ];
  console.log('samples memory benchmark (peak RSS of a fresh process per case)');
  for (const c of cases) {
    const { write: w } = run(c);
    console.log(
      `  ${c[1].padEnd(40)} ${w.samples} × ${w.sampleBytes / 1024} KB = ${w.inputMiB.toFixed(0)} MiB in ${w.seconds.toFixed(1)} s; ` +
        `written ${w.written}, dropped ${w.dropped}; on disk ${w.onDiskMiB.toFixed(1)} MiB; ` +
        `RSS ${w.rssBeforeMiB.toFixed(0)} → peak ${w.peakRssMiB.toFixed(0)} MiB`,
    );
  }
  const { scan: s } = run(['scan-child', '100000', '8192']);
  console.log(
    `  ${'stream back 100,000 × 8 KB'.padEnd(40)} ${s.read} samples, ${(s.chars / MiB).toFixed(0)} Mi chars in ${s.seconds.toFixed(1)} s; RSS ${s.rssBeforeMiB.toFixed(0)} → peak ${s.peakRssMiB.toFixed(0)} MiB`,
  );
}
