/**
 * What does capturing Harbor trials cost, and do runs with many captures stay readable?
 *
 *   npm run bench:trials                    (the release addon and dist/ that `npm ci` builds)
 *   npm run bench:trials -- --captures 2000
 *
 * 1. A realistic trial (~4.5 MB: an ATIF trajectory of 200 turns and 200 tool calls, a 1 MB
 *    trial.log, 40 artifacts of 64 KB, verifier output): `captureTrial` into a run, per
 *    capture (median, p90, MB/s), a recapture of the same trial, and stage + deliver. The
 *    alternative a user would pick is `cp -r` of the directory (no ledger, no hashes, no
 *    spans), timed beside it. While capturing, the event loop's longest stall is measured:
 *    capture runs beside a training loop and must not freeze it.
 * 2. A run with N small captures (the claude-code fixture, 12 turns, one capture per step):
 *    capture rate, then read surfaces each in a fresh process (best of 3): `trials({step})`,
 *    one step's spans (run spans + captured), span counts, `probe trial list --step`.
 * 3. A trial of 50,000 small files (--files N): `stageTrial`, then `deliverStaged` into a
 *    fresh run, each timed beside `cp -r` of the same tree (the coreutils binary), medians of
 *    --file-reps rounds, each timing after a `sync`, `cp -r` first in one round and last in the
 *    next, so a busy disk slows all three alike. Delivery must stay
 *    within 5x `cp -r` (issue 15): it copies, hashes and fsyncs every file and journals each
 *    confirmation; `cp -r` does none of that.
 *
 *   npm run bench:trials -- --only 3 --files 50000 --file-reps 3
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { Recorder, RunReader, captureTrial, deliverStaged, stageTrial } from '../dist/index.js';

const HERE = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(HERE), '..');
const FIXTURE = path.resolve(ROOT, 'test/fixtures/harbor/claude-code-atif-v1.7/pass/agent/trajectory.json');

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}
const median = (xs: number[]) => quantile(xs, 0.5);
const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 1)} ms`;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

function atif(turns: number): unknown {
  const t0 = Date.parse('2026-11-30T10:00:00Z');
  const steps = [];
  for (let i = 1; i <= turns; i++) {
    const ts = new Date(t0 + i * 3000).toISOString();
    const calls = i % 2 === 0 ? [0, 1].map((k) => ({ tool_call_id: `c${i}-${k}`, function_name: k ? 'bash' : 'read', arguments: { command: `ls -la /repo/src/${i}/${k}` } })) : [];
    steps.push({
      step_id: i,
      timestamp: ts,
      source: i === 1 ? 'user' : 'agent',
      message: `turn ${i}: ${'reasoning about the repository and the failing test '.repeat(8)}`,
      ...(i > 1 ? { model_name: 'policy-7b', metrics: { prompt_tokens: 1000 + i * 40, completion_tokens: 120, cost_usd: 0.0001 } } : {}),
      ...(calls.length ? { tool_calls: calls, observation: { results: calls.map((c) => ({ source_call_id: c.tool_call_id, content: 'x'.repeat(600) })) } } : {}),
    });
  }
  return { schema_version: 'ATIF-v1.7', session_id: 's-1', agent: { name: 'terminus-2', version: '1', model_name: 'policy-7b' }, steps };
}

/** A trial directory of about 4.5 MB; `id` is its result id. */
function makeBigTrial(dir: string, id: string): void {
  mkdirSync(path.join(dir, 'agent'), { recursive: true });
  mkdirSync(path.join(dir, 'verifier'), { recursive: true });
  mkdirSync(path.join(dir, 'artifacts', 'out'), { recursive: true });
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ trial_name: path.basename(dir), task: { path: 'tasks/t' } }));
  writeFileSync(
    path.join(dir, 'result.json'),
    JSON.stringify({ id, trial_name: path.basename(dir), task_name: 't', agent_info: { name: 'terminus-2', model_info: { name: 'policy-7b' } }, verifier_result: { rewards: { reward: 1 } }, started_at: '2026-11-30T10:00:00Z', finished_at: '2026-11-30T10:12:00Z' }),
  );
  writeFileSync(path.join(dir, 'agent', 'trajectory.json'), JSON.stringify(atif(200)));
  writeFileSync(path.join(dir, 'trial.log'), randomBytes(512 * 1024).toString('hex'));
  writeFileSync(path.join(dir, 'verifier', 'reward.txt'), '1\n');
  writeFileSync(path.join(dir, 'verifier', 'test-stdout.txt'), 'ok\n'.repeat(5000));
  const manifest = [];
  for (let i = 0; i < 40; i++) {
    writeFileSync(path.join(dir, 'artifacts', 'out', `f${i}.bin`), randomBytes(64 * 1024));
    manifest.push({ source: `/out/f${i}.bin`, destination: `artifacts/out/f${i}.bin`, type: 'file', status: 'ok' });
  }
  writeFileSync(path.join(dir, 'artifacts', 'manifest.json'), JSON.stringify(manifest));
}

function makeSmallTrial(dir: string, id: string, name: string): void {
  mkdirSync(path.join(dir, 'agent'), { recursive: true });
  mkdirSync(path.join(dir, 'verifier'), { recursive: true });
  writeFileSync(path.join(dir, 'result.json'), JSON.stringify({ id, trial_name: name, verifier_result: { rewards: { reward: 0.5 } }, started_at: '2026-06-16T12:35:00Z', finished_at: '2026-06-16T12:45:00Z' }));
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ trial_name: name }));
  cpSync(FIXTURE, path.join(dir, 'agent', 'trajectory.json'));
  writeFileSync(path.join(dir, 'verifier', 'reward.txt'), '0.5\n');
}

/** A trial of `n` files of 200-400 bytes in 50 directories under artifacts/. */
function makeManyFilesTrial(dir: string, n: number): number {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'result.json'), JSON.stringify({ id: randomUUID(), trial_name: path.basename(dir), verifier_result: { rewards: { reward: 1 } } }));
  let bytes = 0;
  for (let d = 0; d < 50; d++) mkdirSync(path.join(dir, 'artifacts', `d${d}`), { recursive: true });
  for (let i = 0; i < n; i++) {
    const body = randomBytes(100 + (i % 100)).toString('hex');
    writeFileSync(path.join(dir, 'artifacts', `d${i % 50}`, `f${i}.txt`), body);
    bytes += body.length;
  }
  return bytes;
}

function newRun(dir: string): void {
  const rec = new Recorder(dir, { runId: `bench-${path.basename(dir)}`, captureEnvironment: false, installHandlers: false });
  rec.logStep({ step: 0, reward_mean: 0 });
  rec.close();
}

// ---------------------------------------------------------------- read surfaces (child)

const SURFACES: Record<string, (r: RunReader, step: number) => string> = {
  'trials({step})': (r, step) => `${r.trials({ step }).length} capture(s)`,
  "one step's spans": (r, step) => `${r.spans({ step }).length} spans`,
  'span counts per kind': (r) => r.spanCounts().map((c) => `${c.kind} ${c.spans}`).join(', '),
  'every capture manifest (trials())': (r) => `${r.trials().length} captures`,
};

function readChild(dir: string, surface: string, step: number): void {
  const times: number[] = [];
  let detail = '';
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    detail = SURFACES[surface](RunReader.open(dir), step);
    times.push(performance.now() - t0);
  }
  process.stdout.write(JSON.stringify({ ms: Math.min(...times), detail }));
}

/** Section 3: stage and deliver many small files, beside `cp -r` of the same tree. */
async function manyFiles(tmp: string): Promise<void> {
  const n = arg('files', 50_000);
  const reps = arg('file-reps', 3);
  const trial = path.join(tmp, 'many-files__M4ny000');
  const bytes = makeManyFilesTrial(trial, n);
  const cp: number[] = [];
  const stage: number[] = [];
  const deliver: number[] = [];
  /** Times `fn`, after `sync` so that no earlier round's writeback is charged to it. */
  const timed = async <T>(into: number[], fn: () => T | Promise<T>): Promise<T> => {
    execFileSync('sync');
    const t0 = performance.now();
    const out = await fn();
    into.push(performance.now() - t0);
    return out;
  };
  for (let i = 0; i < reps; i++) {
    const copy = path.join(tmp, `cp-many-${i}`);
    const spool = path.join(tmp, `spool-many-${i}`);
    const run = path.join(tmp, `run-many-files-${i}`);
    newRun(run);
    // cp -r first in one round, last in the next: neither goes first into a busier disk every time
    const copyIt = () => timed(cp, () => execFileSync('cp', ['-r', trial, copy]));
    if (i % 2 === 0) await copyIt();
    await timed(stage, () => stageTrial(trial, { to: spool, step: i }));
    const [d] = await timed(deliver, () => deliverStaged(spool, { run }));
    if (i % 2 === 1) await copyIt();
    if (d.status !== 'delivered') throw new Error(`delivery failed: ${d.error ?? JSON.stringify(d.unconfirmed.slice(0, 3))}`);
    if (d.delivered !== n + 1) throw new Error(`delivered ${d.delivered} of ${n + 1} files`);
    // removed at the end, not here: deleting 150,000 files keeps the disk busy into the next timing
  }
  const sec = (x: number) => `${(x / 1000).toFixed(2)} s`;
  console.log(`3. a trial of ${n} small files (${(bytes / 1048576).toFixed(1)} MiB), ${reps} rounds, medians:`);
  console.log(`   cp -r               ${sec(median(cp))}`);
  console.log(`   stageTrial          ${sec(median(stage))}  (${(median(stage) / median(cp)).toFixed(1)}x cp -r)`);
  console.log(`   deliverStaged       ${sec(median(deliver))}  (${(median(deliver) / median(cp)).toFixed(1)}x cp -r; target <= 5x)`);
}

async function main(): Promise<void> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-bench-trials-'));
  const only = arg('only', 0);
  try {
    if (only === 0 || only === 1) await realisticTrial(tmp);
    if (only === 0 || only === 2) await manyCaptures(tmp);
    if (only === 0 || only === 3) await manyFiles(tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Section 1: one realistic trial, captured, recaptured, staged and delivered. */
async function realisticTrial(tmp: string): Promise<void> {
  const big = path.join(tmp, 'big__AbC1234');
  makeBigTrial(big, randomUUID());
  const run = path.join(tmp, 'run');
  newRun(run);
  const reps = arg('reps', 15);
  const cap: number[] = [];
  const cp: number[] = [];
  const stalls: number[] = [];
  let bytes = 0;
  for (let i = 0; i < reps; i++) {
    // a new result id each time: a new capture, as a training loop makes them
    const r = JSON.parse(readFileSync(path.join(big, 'result.json'), 'utf8'));
    r.id = randomUUID();
    writeFileSync(path.join(big, 'result.json'), JSON.stringify(r));
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const t0 = performance.now();
    const m = await captureTrial(big, { run, step: i, sampleId: `s${i}` });
    cap.push(performance.now() - t0);
    h.disable();
    stalls.push(h.max / 1e6);
    bytes = m.ledger.bytes;
    const t1 = performance.now();
    cpSync(big, path.join(tmp, `cp-${i}`), { recursive: true });
    cp.push(performance.now() - t1);
  }
  const re: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await captureTrial(big, { run, step: reps - 1 });
    re.push(performance.now() - t0);
  }
  const stage: number[] = [];
  const deliver: number[] = [];
  for (let i = 0; i < 5; i++) {
    const spool = path.join(tmp, `spool-${i}`);
    const t0 = performance.now();
    await stageTrial(big, { to: spool, step: i });
    stage.push(performance.now() - t0);
    const t1 = performance.now();
    const [d] = await deliverStaged(spool, { run });
    deliver.push(performance.now() - t1);
    if (d.status !== 'delivered') throw new Error(`delivery failed: ${JSON.stringify(d.unconfirmed)}`);
  }
  const m = RunReader.open(run).trials({ step: 0 })[0];
  console.log(`1. one trial of ${(bytes / 1048576).toFixed(2)} MiB, ${m.ledger.counts.collected} files, ${m.spans.count} spans (${m.trajectories[0].turns} turns, ${m.trajectories[0].tool_calls} tool calls); ${reps} captures`);
  console.log(`   captureTrial            median ${ms(median(cap))}  p90 ${ms(quantile(cap, 0.9))}  (${(bytes / 1048576 / (median(cap) / 1000)).toFixed(0)} MiB/s)`);
  console.log(`   cp -r (no ledger/spans) median ${ms(median(cp))}  p90 ${ms(quantile(cp, 0.9))}`);
  console.log(`   recapture (same trial)  median ${ms(median(re))}`);
  console.log(`   stage                   median ${ms(median(stage))}`);
  console.log(`   deliver                 median ${ms(median(deliver))}`);
  console.log(`   longest event-loop stall while capturing: median ${ms(median(stalls))}, max ${ms(Math.max(...stalls))}`);
}

/** Section 2: a run of many small captures, and its read surfaces. */
async function manyCaptures(tmp: string): Promise<void> {
  const n = arg('captures', 1000);
  const run2 = path.join(tmp, 'run-many');
  newRun(run2);
  const small = path.join(tmp, 'small');
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    rmSync(small, { recursive: true, force: true });
    makeSmallTrial(small, randomUUID(), `task-${i}__x`);
    await captureTrial(small, { run: run2, step: i, sampleId: `s${i}` });
  }
  const total = performance.now() - t0;
  console.log(`2. ${n} captures of the claude-code fixture (12 turns, 25 spans each), one per step: ${(n / (total / 1000)).toFixed(0)} captures/s (incl. building each trial dir)`);
  const step = Math.floor(n / 2);
  for (const surface of Object.keys(SURFACES)) {
    const r = spawnSync(process.execPath, [...process.execArgv, HERE, '--read', run2, surface, String(step)], { encoding: 'utf8' });
    if (r.status !== 0) {
      console.log(`   ${surface}: failed\n${r.stderr}`);
      continue;
    }
    const o = JSON.parse(r.stdout) as { ms: number; detail: string };
    console.log(`   ${surface.padEnd(34)} ${ms(o.ms).padStart(10)}  ${o.detail}`);
  }
  const cli = path.join(ROOT, 'dist', 'cli', 'bin.js');
  const walls: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t1 = performance.now();
    const r = spawnSync(process.execPath, [cli, 'trial', 'list', run2, '--step', String(step)], { encoding: 'utf8' });
    walls.push(performance.now() - t1);
    if (r.status !== 0) throw new Error(r.stderr);
  }
  console.log(`   probe trial list --step (process wall, best of 3) ${ms(Math.min(...walls))}`);
}

if (process.argv[2] === '--read') readChild(process.argv[3], process.argv[4], Number(process.argv[5]));
else await main();
