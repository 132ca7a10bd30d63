/**
 * How many rows a second the writer thread keeps up with (issue 15, item 3), with default
 * options and the 40-field record of benches/overhead.ts:
 *
 * 1. paced: logStep at a fixed rate (100,000 and 200,000 rows/s) for a few seconds; the
 *    writer keeps up when nothing is dropped and the backlog at the end is small;
 * 2. flat out: 2,000,000 records back to back, far faster than any writer: how many rows
 *    the writer took and published meanwhile (its drain rate), and how many the full
 *    queue dropped (counted, as designed).
 *
 *   npm run bench:writer [-- --seconds 5]
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Recorder } from '../dist/index.js'; // what users run (built by npm ci)
import { makeRecord } from './step-record.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-bench-writer-'));
const secondsArg = process.argv.indexOf('--seconds');
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 5;
const opts = { installHandlers: false, captureEnvironment: false } as const;
const records = Array.from({ length: 4096 }, (_, i) => makeRecord(i));

function parts(dir: string): number {
  try {
    return readdirSync(path.join(dir, 'steps')).filter((n) => n.endsWith('.parquet')).length;
  } catch {
    return 0;
  }
}

function paced(rate: number): void {
  const dir = path.join(tmp, `paced-${rate}`);
  const rec = new Recorder(dir, opts);
  const total = rate * SECONDS;
  const start = performance.now();
  let maxPending = 0;
  for (let i = 0; i < total; i++) {
    if ((i & 1023) === 0) {
      while (performance.now() - start < (i * 1000) / rate) {
        // pace
      }
      if ((i & 65535) === 0) maxPending = Math.max(maxPending, rec.counters.pending);
    }
    const r = records[i & 4095];
    r.step = i;
    rec.logStep(r);
  }
  const logEnd = performance.now();
  const backlog = rec.counters.pending;
  rec.flushSync(60_000);
  const drained = performance.now();
  const c = rec.counters;
  const published = parts(dir);
  rec.close();
  console.log(
    `  ${rate.toLocaleString('en-US')} rows/s for ${SECONDS} s: logged ${c.logged}, written ${c.written}, dropped ${c.dropped}; ` +
      `backlog when logging ended ${backlog} rows (max sampled ${maxPending}), drained ${(drained - logEnd).toFixed(0)} ms later; ${published} parts ` +
      `→ ${c.dropped === 0 ? 'keeps up' : 'FALLS BEHIND'}`,
  );
}

function flatOut(n: number): void {
  const dir = path.join(tmp, 'flat');
  const rec = new Recorder(dir, opts);
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const r = records[i & 4095];
    r.step = i;
    rec.logStep(r);
  }
  const logged = performance.now();
  rec.flushSync(120_000);
  const done = performance.now();
  const c = rec.counters;
  const published = parts(dir);
  rec.close();
  const secs = (done - start) / 1000;
  console.log(
    `  ${n.toLocaleString('en-US')} records back to back: logged in ${(logged - start).toFixed(0)} ms, all published after ${(done - start).toFixed(0)} ms; ` +
      `written ${c.written} (${Math.round(c.written / secs).toLocaleString('en-US')} rows/s), dropped by the full queue ${c.dropped}; ${published} parts`,
  );
}

console.log(`## writer throughput, 40-field records, default options (flushSteps 200, queue 8192), ${os.loadavg()[0].toFixed(2)} load`);
try {
  for (const rate of [100_000, 200_000]) paced(rate);
  flatOut(2_000_000);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
