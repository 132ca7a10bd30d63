/**
 * Child for test/exit-paths.test.ts: logs steps, then leaves the process one way or another.
 *
 *   node --import tsx test/children/exit-child.ts <runDir> <ending> <steps> [flush|noflush] [recorders]
 *
 * With RLPROBE_TEST_DISABLE=1 it does exactly the same without creating any Recorder (nor
 * loading rlprobe), so the parent can compare exit codes and signals with and without it.
 *
 * Endings:
 *   natural        fall off the end of the script
 *   exitcode       process.exitCode = 7, then fall off the end
 *   close          rec.close(), then fall off the end
 *   exit3          process.exit(3)
 *   throw          throw from a timer (uncaught exception)
 *   reject         an unhandled promise rejection
 *   wait           print "ready" and wait for a signal (parent sends SIGTERM/SIGINT/SIGHUP)
 *   user-sigterm   a user SIGTERM listener, installed after the recorder, logs one more step,
 *                  prints "user-handler" and calls process.exit(0)
 *   user-sigterm-once-first
 *                  a user process.once('SIGTERM') listener installed BEFORE the recorder does
 *                  a graceful, asynchronous shutdown: logs one more step, prints
 *                  "user-handler", exits 0 after 200 ms
 *   busy-natural   print "ready", compute synchronously for BUSY_MS (the parent signals
 *                  meanwhile), then fall off the end
 *   busy-exitcode  the same, then process.exitCode = 7
 *   busy-exit3     the same, then process.exit(3)
 *   busy-user-sigterm
 *                  a user SIGTERM listener (as in user-sigterm), then busy-natural: Node holds
 *                  the signal for the listener, and the loop ends before delivering it
 */
import path from 'node:path';

interface RecLike {
  logStep(record: { step: number; [k: string]: unknown }): void;
  logEvent(kind: string, options?: { step?: number; message?: string; data?: Record<string, unknown> }): void;
  flushSync(timeoutMs?: number): boolean;
  close(): unknown;
}

const [runDir, ending, stepsArg, flushArg = 'noflush', recordersArg = '1'] = process.argv.slice(2);
if (!runDir || !ending || !stepsArg) {
  console.error('usage: exit-child.ts <runDir> <ending> <steps> [flush|noflush] [recorders]');
  process.exit(64);
}
const steps = Number(stepsArg);
/** Long enough for the parent's signal to arrive during the stretch, even under load. */
const BUSY_MS = 3000;
const disabled = process.env.RLPROBE_TEST_DISABLE === '1';
const recorderCount = Number(recordersArg);

function gracefulShutdown(recs: RecLike[]): void {
  for (const r of recs) r.logStep(stepRecord(steps));
  console.log('user-handler');
  setTimeout(() => process.exit(0), 200);
}

let recs: RecLike[] = [];
if (ending === 'user-sigterm-once-first') {
  // the user's listener exists before rlprobe's
  process.once('SIGTERM', () => gracefulShutdown(recs));
}

if (!disabled) {
  const { Recorder } = await import('../../ts/index.js');
  for (let i = 0; i < recorderCount; i++) {
    const dir = recorderCount === 1 ? runDir : path.join(runDir, `rec-${i}`);
    recs.push(new Recorder(dir, { algorithm: 'grpo', flushSteps: 200, flushIntervalMs: 5000, captureEnvironment: false }));
  }
} else {
  recs = Array.from({ length: recorderCount }, () => ({
    logStep() {},
    logEvent() {},
    flushSync: () => true,
    close() {},
  }));
}

function stepRecord(step: number) {
  return {
    step,
    loss: 1 / (step + 1),
    reward_mean: step % 7,
    ...(step % 3 === 0 ? { reward_components: { format: 0.5, correct: step % 2 } } : {}),
    extra: { foo: step },
  };
}

for (let step = 0; step < steps; step++) {
  for (const r of recs) r.logStep(stepRecord(step));
  if (step === Math.floor(steps / 2)) for (const r of recs) r.logEvent('checkpoint', { step, message: 'half way', data: { step } });
}
if (flushArg === 'flush') {
  for (const r of recs) {
    if (!r.flushSync(20_000)) {
      console.error('flushSync timed out');
      process.exit(70);
    }
  }
}
console.log(`logged ${steps}`);

switch (ending) {
  case 'natural':
    break;
  case 'exitcode':
    process.exitCode = 7;
    break;
  case 'close':
    for (const r of recs) r.close();
    break;
  case 'exit3':
    process.exit(3);
  // falls through (unreachable)
  case 'throw':
    setTimeout(() => {
      throw new Error('boom-uncaught');
    }, 10);
    break;
  case 'reject':
    void Promise.reject(new Error('boom-rejected'));
    break;
  case 'user-sigterm':
    process.on('SIGTERM', () => {
      for (const r of recs) r.logStep(stepRecord(steps));
      console.log('user-handler');
      process.exit(0);
    });
  // falls through
  case 'wait':
  case 'user-sigterm-once-first': {
    // keep the process alive until a signal arrives (bounded, in case the parent dies)
    const keepAlive = setInterval(() => {}, 1000);
    setTimeout(() => {
      clearInterval(keepAlive);
      console.error('no signal within 120 s');
      process.exit(71);
    }, 120_000).unref();
    console.log('ready');
    break;
  }
  case 'busy-user-sigterm':
    process.on('SIGTERM', () => {
      console.log('user-handler');
      process.exit(0);
    });
  // falls through
  case 'busy-natural':
  case 'busy-exitcode':
  case 'busy-exit3': {
    // a long synchronous stretch (a training step on the CPU): a signal arriving now waits
    // for the event loop when a listener is installed, and kills at once when none is
    console.log('ready');
    const until = Date.now() + BUSY_MS;
    let spins = 0;
    while (Date.now() < until) spins++;
    console.log(`busy done (${spins} spins)`);
    if (ending === 'busy-exitcode') process.exitCode = 7;
    if (ending === 'busy-exit3') process.exit(3);
    break;
  }
  default:
    console.error(`unknown ending ${ending}`);
    process.exit(64);
}
