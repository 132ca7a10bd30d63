/**
 * Child for test/writer-guards.test.ts: opens a recorder on <dir>, logs one step, prints
 * "ready" and waits to be killed.
 */
import { Recorder } from '../../ts/index.js';

const rec = new Recorder(process.argv[2], { captureEnvironment: false });
rec.logStep({ step: 0, loss: 1 });
rec.flushSync();
console.log('ready');
setInterval(() => undefined, 1 << 30);
