/**
 * Child for test/writer-guards.test.ts: records into <dir> on a small filesystem, fills the
 * filesystem with <filler>, keeps logging, then frees the space and logs again. Prints one
 * JSON line per phase: {phase, flushed (every flushSync of the phase returned true), counters}.
 */
import { openSync, rmSync, writeSync, closeSync } from 'node:fs';

import { Recorder } from '../../ts/index.js';

const [dir, filler] = process.argv.slice(2);
const rec = new Recorder(dir, { captureEnvironment: false, flushSteps: 10 });
const report = (phase: string, flushed: boolean) => console.log(JSON.stringify({ phase, flushed, counters: rec.counters }));

for (let step = 0; step < 10; step++) rec.logStep({ step, loss: step });
report('before', rec.flushSync());

const fd = openSync(filler, 'w');
const block = Buffer.alloc(4096, 7);
try {
  for (;;) writeSync(fd, block);
} catch {
  // ENOSPC: the filesystem is full
}
closeSync(fd);
let allFlushed = true;
for (let step = 10; step < 60; step++) {
  rec.logStep({ step, loss: step });
  if (step % 10 === 9) allFlushed = rec.flushSync() && allFlushed; // several failed writes, one stderr line
}
report('full', rec.flushSync() && allFlushed);

rmSync(filler);
for (let step = 60; step < 70; step++) rec.logStep({ step, loss: step });
report('freed', rec.flushSync());
const summary = rec.close();
console.log(JSON.stringify({ phase: 'closed', error: summary.error, counters: summary.counters }));
