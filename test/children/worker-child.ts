/**
 * Child for test/worker-threads.test.ts: a recorder in a worker thread, and the process
 * ending one way or another — by the worker or by the main thread.
 *
 *   node --import tsx test/children/worker-child.ts <runDir> <scenario> <steps>
 *
 * The main thread loads rlprobe (as a trainer that records in a worker would) before it
 * starts the worker; the worker records <steps> steps, a checkpoint event and a batch of 20
 * samples (8 kept) after the last step. With
 * RLPROBE_TEST_DISABLE=1 neither thread loads rlprobe, so the parent can compare how the
 * process ends with and without it.
 *
 * Scenarios (the worker prints nothing; the main thread prints what it sees):
 *   worker-natural  the worker's script ends
 *   worker-exit5    the worker calls process.exit(5)
 *   worker-throw    the worker throws from a timer (the main thread handles 'error')
 *   main-exit4      once the worker has logged, the main thread calls process.exit(4)
 *   main-natural    once the worker has logged, the main thread unrefs it and ends
 *   main-throw      once the worker has logged, the main thread throws
 *   main-signal     once the worker has logged, the main thread prints "ready" and waits
 *                   for the parent's SIGTERM
 *   terminate       once the worker has logged, the main thread calls worker.terminate()
 *                   and then ends
 *   bare-main-exit4 as main-exit4, but the main thread never loads rlprobe (only the worker
 *                   does), so nothing relays the main thread's ending
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

interface Job {
  runDir: string;
  scenario: string;
  steps: number;
  disabled: boolean;
}

/** The worker's entry: tsx's loader (workers do not inherit it), then this very file. */
const WORKER_BOOT = `
const [tsxApi, self] = process.argv.slice(2);
import(tsxApi).then(({ register }) => { register(); return import(self); });
`;

/** Bounds every wait, in case the parent dies. */
const WATCHDOG_MS = 120_000;

if (isMainThread) await runMain();
else await runWorker(workerData as Job);

async function runMain(): Promise<void> {
  const [runDir, scenario, stepsArg] = process.argv.slice(2);
  if (!runDir || !scenario || !stepsArg) {
    console.error('usage: worker-child.ts <runDir> <scenario> <steps>');
    process.exit(64);
  }
  const disabled = process.env.RLPROBE_TEST_DISABLE === '1';
  // loaded before the worker starts: the worker inherits what rlprobe shares with it
  if (!disabled && scenario !== 'bare-main-exit4') await import('../../ts/index.js');
  const job: Job = { runDir, scenario, steps: Number(stepsArg), disabled };
  const worker = new Worker(WORKER_BOOT, { eval: true, workerData: job, argv: [import.meta.resolve('tsx/esm/api'), import.meta.url] });
  worker.on('error', (e) => console.log(`worker error: ${e.message}`));
  worker.on('exit', (code) => console.log(`worker exit ${code}`));
  const watchdog = setTimeout(() => {
    console.error(`no ending within ${WATCHDOG_MS} ms`);
    process.exit(71);
  }, WATCHDOG_MS);
  watchdog.unref();
  worker.on('message', (m) => {
    if (m !== 'logged') return;
    console.log('worker logged');
    switch (scenario) {
      case 'main-exit4':
      case 'bare-main-exit4':
        process.exit(4);
      // falls through (unreachable)
      case 'main-natural':
        worker.unref();
        break;
      case 'main-throw':
        throw new Error('boom-in-main');
      case 'terminate':
        void worker.terminate();
        break;
      case 'main-signal': {
        // rlprobe hooks the main thread's signals when it hears of the worker's recorder
        const poll = setInterval(() => {
          if (disabled || process.listenerCount('SIGTERM') > 0) {
            clearInterval(poll);
            console.log('ready');
          }
        }, 5);
        break;
      }
    }
  });
}

async function runWorker(job: Job): Promise<void> {
  interface RecLike {
    logStep(record: Record<string, unknown>): void;
    logEvent(kind: string, options?: Record<string, unknown>): void;
    logSamples(samples: Array<Record<string, unknown>>, options?: Record<string, unknown>): void;
  }
  let rec: RecLike = { logStep() {}, logEvent() {}, logSamples() {} };
  if (!job.disabled) {
    const { Recorder } = await import('../../ts/index.js');
    rec = new Recorder(job.runDir, { algorithm: 'grpo', flushSteps: 200, flushIntervalMs: 5000, captureEnvironment: false });
  }
  for (let step = 0; step < job.steps; step++) {
    rec.logStep({ step, loss: 1 / (step + 1), extra: { foo: step } });
    if (step === Math.floor(job.steps / 2)) rec.logEvent('checkpoint', { step, message: 'half way' });
  }
  // after the last step and with no turn before the ending: nothing but the call itself
  // can encode them when the main thread terminates the worker
  rec.logSamples(Array.from({ length: 20 }, (_, i) => ({ reward_total: i, completion_text: `sample ${i}` })), { step: job.steps - 1 });
  switch (job.scenario) {
    case 'worker-natural':
      parentPort!.postMessage('logged');
      return;
    case 'worker-exit5':
      parentPort!.postMessage('logged');
      process.exit(5);
    // falls through (unreachable)
    case 'worker-throw':
      parentPort!.postMessage('logged');
      setTimeout(() => {
        throw new Error('boom-in-worker');
      }, 10);
      return;
    case 'terminate': {
      // busy, never yielding, until the main thread terminates it: no turn of the
      // worker's event loop comes between its last calls and its end
      parentPort!.postMessage('logged');
      const until = Date.now() + WATCHDOG_MS;
      while (Date.now() < until) {
        // computing
      }
      return;
    }
    default: {
      // alive until the main thread ends the process
      setInterval(() => {}, 1000);
      parentPort!.postMessage('logged');
    }
  }
}
