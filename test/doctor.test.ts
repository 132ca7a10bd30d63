/**
 * The doctor end to end: realistic seeded GRPO runs recorded through `Recorder` (healthy,
 * or with one problem injected from a known step), diagnosed by `probe doctor` (a child
 * process) and by the library's `diagnose`; an imported rounded verl log; and live
 * diagnosis inside the recorder (`doctor: { live: true }`, `onFinding`, `haltSignal`).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Recorder, RlprobeError, RunReader, diagnose } from '../ts/index.js';
import type { Diagnosis, Finding, RecorderOptions, RunEvent, StoredSampleRecord } from '../ts/index.js';
import {
  LEN_CAP,
  dropLoss,
  healthyGrpo,
  injectEntropyCollapse,
  injectNanLoss,
  injectTruncationCollapse,
  recordPoints,
  recordPointsSync,
} from './helpers/doctor-runs.js';
import type { RunPoint } from './helpers/doctor-runs.js';
import { throwsCode } from './helpers/errors.js';
import { QUIET, cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';
import type { ChildResult } from './helpers/fixtures.js';

after(cleanupTempDirs);

/** Every detector the doctor has (crates/rlprobe-doctor/src/detectors/mod.rs). */
const ALL_DETECTORS = [
  'nan_inf', 'gradients', 'kl', 'entropy', 'zero_variance_groups', 'advantages', 'clip_fraction', 'ratio', 'value_head',
  'learning_rate', 'reward', 'reward_hacking', 'length', 'truncation', 'repetition', 'reward_components', 'throughput',
  'logprob_mismatch',
];
/** The detectors the generated GRPO runs give no input to, and why. */
const NOT_CHECKED: Record<string, string> = {
  advantages: 'no adv_zero_frac column; no adv_std column',
  ratio: 'no ratio_p95 / ratio_mean column',
  value_head: 'no value_explained_variance column; no value_loss column',
  repetition: 'no repetition_rate column',
  reward_components: '0 reward_component.* column(s) with 35+ points, needs 2',
  logprob_mismatch: 'no extra.* rollout-vs-trainer logprob difference column',
};

const STEPS = 400;
const ONSET = 250;
const NAN_STEP = 200;
/** Steps at which the loss is not logged at all (a gap, not a NaN). */
const MISSING_LOSS = [120, 121, 122, 123, 124, 300];

/** Closed runs (one part, compacted on close), recorded once. */
let healthyRun: string;
let entropyRun: string;
let nanRun: string;
let truncationRun: string;

/** Records `points` into a fresh run directory and closes it. */
function recordRun(label: string, points: RunPoint[], options: RecorderOptions = {}): string {
  const dir = path.join(tempDir(`rlprobe-doctor-${label}-`), 'run');
  const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false, runId: label, algorithm: 'grpo', ...options });
  recordPointsSync(rec, points);
  const summary = rec.close();
  assert.equal(summary.counters.written, points.length, `${label}: every step written`);
  assert.equal(summary.counters.bad, 0, `${label}: no bad record`);
  return dir;
}

function assertExit(r: ChildResult, code: number, what: string): void {
  assert.equal(r.code, code, `${what}: exit ${r.code} (signal ${r.signal})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

async function doctorJson(run: string, ...args: string[]): Promise<Diagnosis> {
  const r = await runCli(['doctor', run, '--json', ...args]);
  assertExit(r, 0, `doctor --json ${args.join(' ')}`);
  return JSON.parse(r.stdout) as Diagnosis;
}

function codes(d: Diagnosis): string[] {
  return d.findings.map((f) => `${f.code}:${f.severity}`);
}

function only(d: Diagnosis, code: string): Finding {
  const f = d.findings.filter((x) => x.code === code);
  assert.equal(f.length, 1, `exactly one ${code} finding: ${JSON.stringify(codes(d))}`);
  return f[0];
}

function assertOnsetNear(f: Finding, step: number, tolerance = 10): void {
  assert.ok(Math.abs(f.onset_step - step) <= tolerance, `${f.code} onset ${f.onset_step} within ±${tolerance} of ${step}`);
}

before(() => {
  healthyRun = recordRun('healthy', dropLoss(healthyGrpo({ seed: 11, steps: STEPS, samplesPerStep: 8 }), MISSING_LOSS));
  entropyRun = recordRun('entropy', injectEntropyCollapse(healthyGrpo({ seed: 12, steps: STEPS }), ONSET));
  nanRun = recordRun('nan', dropLoss(injectNanLoss(healthyGrpo({ seed: 13, steps: STEPS }), NAN_STEP), MISSING_LOSS));
  truncationRun = recordRun('truncation', injectTruncationCollapse(healthyGrpo({ seed: 14, steps: STEPS, samplesPerStep: 8 }), ONSET));
});

describe('probe doctor on recorded runs', { concurrency: true }, () => {
  test('a healthy run: no problems, the detectors without input listed with their reason, exit 0', async () => {
    const [text, failOnWarn, json] = await Promise.all([
      runCli(['doctor', healthyRun]),
      runCli(['doctor', healthyRun, '--fail-on', 'warn']),
      runCli(['doctor', healthyRun, '--json']),
    ]);
    assertExit(text, 0, 'doctor');
    assertExit(failOnWarn, 0, 'doctor --fail-on warn');
    assertExit(json, 0, 'doctor --json');

    const d = JSON.parse(json.stdout) as Diagnosis;
    assert.deepEqual(d.findings, []);
    assert.equal(d.points, STEPS);
    assert.equal(d.samples, STEPS * 8);
    assert.equal(path.resolve(d.run_dir), path.resolve(healthyRun));
    assert.deepEqual(Object.fromEntries(d.skipped.map((s) => [s.detector, s.reason])), NOT_CHECKED);
    assert.deepEqual(d.skipped.find((s) => s.detector === 'value_head')?.codes, ['VALUE_FUNCTION_FAILURE']);
    // every detector either ran or says why not
    assert.deepEqual([...d.ran, ...d.skipped.map((s) => s.detector)].sort(), [...ALL_DETECTORS].sort());

    const lines = text.stdout.trimEnd().split('\n');
    assert.equal(lines[0], `No problems found in ${STEPS} logged points (${d.ran.length} detectors ran).`);
    assert.equal(lines[1], '');
    assert.equal(lines[2], `Not checked (no usable input), ${d.skipped.length} detector(s):`);
    assert.equal(lines.length, 3 + d.skipped.length, text.stdout);
    assert.ok(
      lines.includes(`  ${'value_head'.padEnd(22)} VALUE_FUNCTION_FAILURE: no value_explained_variance column; no value_loss column`),
      text.stdout,
    );
    for (const [detector, reason] of Object.entries(NOT_CHECKED)) {
      assert.ok(lines.some((l) => l.startsWith(`  ${detector} `) && l.endsWith(`: ${reason}`)), `${detector} listed:\n${text.stdout}`);
    }
    assert.equal(failOnWarn.stdout, text.stdout);
  });

  test('entropy collapse from step 250: CRITICAL ENTROPY_COLLAPSE dated ~250, --fail-on exits 2, --since drops it, same as the library', async () => {
    const [text, json, failOnCritical, failOnWarn, since300, since300Json, badFailOn] = await Promise.all([
      runCli(['doctor', entropyRun]),
      runCli(['doctor', entropyRun, '--json']),
      runCli(['doctor', entropyRun, '--fail-on', 'critical']),
      runCli(['doctor', entropyRun, '--fail-on', 'warn', '--json']),
      runCli(['doctor', entropyRun, '--since', '300', '--fail-on', 'critical']),
      runCli(['doctor', entropyRun, '--since', '300', '--json']),
      runCli(['doctor', entropyRun, '--fail-on', 'sometimes']),
    ]);
    assertExit(text, 0, 'doctor without --fail-on');
    assertExit(json, 0, 'doctor --json');
    assertExit(failOnCritical, 2, 'doctor --fail-on critical');
    assertExit(failOnWarn, 2, 'doctor --fail-on warn');
    assertExit(since300, 0, 'doctor --since 300 --fail-on critical');
    assertExit(since300Json, 0, 'doctor --since 300 --json');
    assertExit(badFailOn, 64, 'doctor --fail-on sometimes');
    assert.match(badFailOn.stderr, /invalid --fail-on "sometimes": expected warn or critical/);

    const d = JSON.parse(json.stdout) as Diagnosis;
    assert.deepEqual(codes(d), ['ENTROPY_COLLAPSE:critical']);
    const f = d.findings[0];
    assertOnsetNear(f, ONSET);
    assert.equal(f.last_step, STEPS - 1, 'still collapsed at the last step');
    assert.deepEqual(f.columns, ['entropy_mean']);
    assert.ok(f.confidence >= 0.7 && f.confidence <= 0.99, `confidence ${f.confidence}`);
    // the stated levels are medians of the recorded column over the stated steps
    const l = f.levels;
    assert.ok(l && l.column === 'entropy_mean' && l.end < 0.15 * l.start, JSON.stringify(l));
    assert.ok(l.start_steps[1] < f.onset_step && l.end_steps[1] === f.last_step, JSON.stringify(l));
    const view = RunReader.open(entropyRun).view();
    const [steps, series] = [view.steps, view.series('entropy_mean')];
    const entropy = (from: number, to: number) => {
      const v = [...series].filter((x, i) => steps[i] >= from && steps[i] <= to && !Number.isNaN(x)).sort((a, b) => a - b);
      const m = v.length >> 1;
      return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
    };
    assert.ok(Math.abs(entropy(...l.start_steps) / l.start - 1) < 1e-9, `start ${l.start}`);
    assert.ok(Math.abs(entropy(...l.end_steps) / l.end - 1) < 1e-9, `end ${l.end}`);
    assert.ok(Math.abs(l.ratio - l.end / l.start) < 1e-12);
    assert.equal(f.root_cause, null);

    const first = text.stdout.split('\n')[0];
    assert.ok(first.startsWith('CRITICAL  ENTROPY_COLLAPSE  onset ~step '), first);
    assert.equal(Number(/onset ~step (\d+) /.exec(first)?.[1]), f.onset_step);
    assert.match(first, new RegExp(`confidence ${Math.round(f.confidence * 100)}%`));
    assert.match(text.stdout, new RegExp(`seen through step ${STEPS - 1}`));
    assert.equal(failOnCritical.stdout, text.stdout, '--fail-on changes the exit code, not the report');
    assert.deepEqual(JSON.parse(failOnWarn.stdout), d);

    // the onset is before 300: --since 300 keeps nothing
    assert.match(since300.stdout, /^No problems found in 400 logged points/);
    assert.deepEqual((JSON.parse(since300Json.stdout) as Diagnosis).findings, []);

    // one code path: the library says the same
    const lib = diagnose(RunReader.open(entropyRun));
    assert.deepEqual(lib.findings, d.findings);
    assert.deepEqual(lib.skipped, d.skipped);
    assert.deepEqual(diagnose(RunReader.open(entropyRun), { since: 300 }).findings, []);
    assert.deepEqual(diagnose(RunReader.open(entropyRun), { since: f.onset_step }).findings, d.findings, '--since is inclusive');
  });

  test('a NaN loss at one step is a critical NAN_INF dated at that step; a missing loss is not a finding', async () => {
    const d = await doctorJson(nanRun);
    assert.deepEqual(codes(d), ['NAN_INF:critical']);
    const f = d.findings[0];
    assert.equal(f.onset_step, NAN_STEP);
    assert.equal(f.last_step, NAN_STEP);
    assert.deepEqual(f.columns, ['loss']);
    // only the NaN point counts, none of the steps where the loss was not logged
    assert.deepEqual(f.evidence, { points: 1, 'loss non-finite points': 1 });
    assert.match(f.message, /non-finite values in loss at 1 logged point\(s\), first at step 200/);

    // the recording keeps the difference: NaN logged at 200, no loss at all at the gaps
    const steps = RunReader.open(nanRun).steps();
    assert.ok(Number.isNaN(steps[NAN_STEP].loss), 'NaN kept');
    for (const s of MISSING_LOSS) assert.equal('loss' in steps[s], false, `no loss at step ${s}`);

    // the healthy run has the same gaps and no finding at all
    const healthy = diagnose(RunReader.open(healthyRun));
    assert.deepEqual(healthy.findings, []);
    assert.ok(healthy.ran.includes('nan_inf'));
    const series = RunReader.open(healthyRun).view().series('loss');
    for (const s of MISSING_LOSS) assert.ok(Number.isNaN(series[s]), `loss missing at ${s}`);
  });

  test('truncation collapse: TRUNCATION_COLLAPSE names the longest truncated samples of its window, which exist and are truncated', async () => {
    const [d, text] = await Promise.all([doctorJson(truncationRun), runCli(['doctor', truncationRun])]);
    assertExit(text, 0, 'doctor');
    const f = only(d, 'TRUNCATION_COLLAPSE');
    assert.equal(f.severity, 'critical');
    assertOnsetNear(f, ONSET);
    assert.equal(f.last_step, STEPS - 1);
    // the stated end share is the median of the last 10 logged points, past the critical line
    assert.ok(f.levels && f.levels.end > 0.9 && f.levels.end_steps[1] === STEPS - 1, JSON.stringify(f.levels));
    assert.ok(f.levels.start < 0.1 && f.levels.start_steps[1] < f.onset_step, JSON.stringify(f.levels));

    const reader = RunReader.open(truncationRun);
    const all: StoredSampleRecord[] = [...reader.samples()];
    assert.equal(all.length, STEPS * 8);
    // the doctor's order: truncated samples within the finding's steps, longest first, then earliest
    const expected = all
      .filter((s) => s.truncated === true && s.step >= f.onset_step && s.step <= f.last_step)
      .sort((a, b) => (b.completion_len ?? 0) - (a.completion_len ?? 0) || a.step - b.step)
      .slice(0, 3);
    assert.equal(f.samples.length, 3);
    assert.deepEqual(
      f.samples.map((s) => [s.step, s.sample_id, s.why]),
      expected.map((s) => [s.step, s.sample_id, 'longest truncated completion']),
    );
    for (const e of f.samples) {
      const [s] = [...reader.samples({ step: e.step })].filter((x) => x.sample_id === e.sample_id);
      assert.ok(s, `evidence sample ${e.sample_id} exists at step ${e.step}`);
      assert.equal(s.truncated, true);
      assert.equal(s.completion_len, LEN_CAP);
      assert.ok(s.step >= f.onset_step && s.step <= f.last_step);
    }
    // no untruncated sample is longer than the evidence
    const longestUntruncated = Math.max(...all.filter((s) => s.truncated !== true).map((s) => s.completion_len ?? 0));
    assert.ok(longestUntruncated < LEN_CAP);
    assert.match(text.stdout, new RegExp(`evidence samples: ${f.samples[0].sample_id} at step ${f.samples[0].step} \\(longest truncated completion\\)`));

    // without samples the finding stands, without evidence
    const bare = diagnose(reader, { samples: false });
    const g = bare.findings.find((x) => x.code === 'TRUNCATION_COLLAPSE');
    assert.ok(g);
    assert.deepEqual(g.samples, []);
    assert.equal(bare.samples, 0);
  });
});

/** A verl console line (the older `{:.3f}` format) behind a Ray prefix. */
function verlLine(step: number, metrics: Record<string, number>): string {
  return `(TaskRunner pid=4242) step:${step} - ${Object.entries(metrics).map(([k, v]) => `${k}:${v.toFixed(3)}`).join(' - ')}`;
}

describe('probe doctor on an imported rounded verl log', () => {
  test('grad_norm printed 0.000 throughout: no GRAD_VANISHING, gradients listed as not checked for the printing resolution', async () => {
    const dir = tempDir('rlprobe-doctor-verl-');
    const points = healthyGrpo({ seed: 21, steps: 120 });
    const metrics = points.map(({ record: r }) => ({
      'actor/entropy': r.entropy_mean!,
      'actor/grad_norm': 0,
      'actor/kl_loss': r.kl_mean!,
      'actor/pg_clipfrac': r.clip_fraction!,
      'actor/pg_loss': r.loss!,
      'critic/score/mean': r.reward_mean!,
      'response_length/mean': r.completion_len_mean!,
      'response_length/clip_ratio': r.truncation_rate!,
      'timing_s/step': r.step_time_s!,
    }));
    const log = path.join(dir, 'train.log');
    writeFileSync(
      log,
      [
        'INFO 2025-05-01 12:00:00 Ray cluster started',
        ...points.map((p, i) => verlLine(p.record.step + 1, metrics[i])),
        '(TaskRunner pid=4242) Training finished',
        '',
      ].join('\n'),
    );
    assert.match(readFileSync(log, 'utf8'), /step:1 - actor\/entropy:0\.\d{3} - actor\/grad_norm:0\.000 - /);
    // the same metrics at full precision (the file backend): zeros that are real zeros
    const jsonl = path.join(dir, 'metrics.jsonl');
    writeFileSync(jsonl, points.map((p, i) => JSON.stringify({ step: p.record.step + 1, data: metrics[i] })).join('\n') + '\n');

    const roundedRun = path.join(dir, 'rounded');
    const exactRun = path.join(dir, 'exact');
    const imports = await Promise.all([runCli(['import', 'verl', log, roundedRun, '--json']), runCli(['import', 'verl', jsonl, exactRun, '--json'])]);
    for (const r of imports) assertExit(r, 0, 'import verl');
    const imported = JSON.parse(imports[0].stdout) as { rows: number; resolution: Record<string, number> };
    assert.equal(imported.rows, 120);
    assert.equal(imported.resolution.grad_norm, 0.001);

    const [rounded, text, exact] = await Promise.all([doctorJson(roundedRun), runCli(['doctor', roundedRun]), doctorJson(exactRun)]);
    assertExit(text, 0, 'doctor on the rounded import');
    assert.equal(rounded.points, 120);
    assert.equal(
      rounded.findings.some((f) => f.code.startsWith('GRAD_')),
      false,
      `no gradient finding from printed zeros: ${JSON.stringify(codes(rounded))}`,
    );
    const grads = rounded.skipped.find((s) => s.detector === 'gradients');
    assert.deepEqual(grads, {
      detector: 'gradients',
      codes: ['GRAD_NORM_SPIKE', 'GRAD_EXPLOSION', 'GRAD_VANISHING'],
      reason: "grad_norm sits below its log's printing resolution (0.001)",
    });
    assert.equal(rounded.ran.includes('gradients'), false);
    assert.match(text.stdout, /^ {2}gradients {14}GRAD_NORM_SPIKE, GRAD_EXPLOSION, GRAD_VANISHING: grad_norm sits below its log's printing resolution \(0\.001\)$/m);

    // control: at full precision a grad_norm of exactly 0 throughout is a real vanishing gradient
    assert.equal(exact.skipped.some((s) => s.detector === 'gradients'), false);
    const v = only(exact, 'GRAD_VANISHING');
    assert.equal(v.severity, 'critical');
  });
});

const LIVE = { ...QUIET, captureEnvironment: false, flushSteps: 20 } as const;
const LIVE_DOCTOR = { live: true, haltOn: 'critical', pollMs: 20, evaluateEvery: 5 } as const;

/** Resolves when `signal` aborts, rejects after `ms`. */
function aborted(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`haltSignal did not abort within ${ms} ms`)), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function eventsOf(dir: string, kind: string): RunEvent[] {
  return RunReader.open(dir).events().filter((e) => e.kind === kind);
}

describe('live diagnosis in the recorder', { concurrency: true }, () => {
  test('an entropy collapse aborts haltSignal with RLPROBE_AUTO_HALT; finding and auto_halt events; offline diagnosis agrees', async () => {
    const dir = path.join(tempDir('rlprobe-live-'), 'run');
    const rec = new Recorder(dir, { ...LIVE, doctor: LIVE_DOCTOR });
    const seen: Finding[] = [];
    rec.onFinding((f) => seen.push(f));
    const unsubscribed: Finding[] = [];
    const off = rec.onFinding((f) => unsubscribed.push(f));
    off();
    assert.equal(rec.haltSignal.aborted, false);
    const initially = rec.haltedBy;
    assert.equal(initially, null, 'nothing halted before any step');

    // a training loop that honours the halt
    const logged = await recordPoints(rec, injectEntropyCollapse(healthyGrpo({ seed: 31, steps: STEPS }), ONSET), {
      delayMs: 5,
      every: 10,
      stopOnHalt: true,
    });
    await aborted(rec.haltSignal, 15_000);
    rec.close();

    assert.ok(logged > ONSET, `logged ${logged}`);
    const halt = rec.haltedBy;
    assert.ok(halt);
    assert.equal(halt.code, 'ENTROPY_COLLAPSE');
    assert.equal(halt.severity, 'critical');
    assert.ok(halt.confidence >= 0.7);
    assertOnsetNear(halt, ONSET);
    const reason = rec.haltSignal.reason as unknown;
    assert.ok(reason instanceof RlprobeError, `reason is an RlprobeError: ${String(reason)}`);
    assert.equal(reason.code, 'RLPROBE_AUTO_HALT');
    assert.match(reason.message, /^halted by ENTROPY_COLLAPSE \(critical, confidence \d+%\): entropy /);

    // callbacks: every finding once, a warn-then-critical escalation at most; the halt is one of them
    assert.ok(seen.length >= 1);
    assert.ok(seen.every((f) => f.code === 'ENTROPY_COLLAPSE'), JSON.stringify(seen.map((f) => f.code)));
    assert.equal(new Set(seen.map((f) => f.severity)).size, seen.length, 'no severity reported twice');
    assert.ok(seen.includes(halt));
    assert.deepEqual(unsubscribed, []);

    const findings = eventsOf(dir, 'finding');
    assert.deepEqual(
      findings.map((e) => [(e.data as unknown as Finding).code, (e.data as unknown as Finding).severity, e.step]),
      seen.map((f) => [f.code, f.severity, f.last_step]),
    );
    for (const e of findings) assert.equal(e.message, `${(e.data as unknown as Finding).severity} ENTROPY_COLLAPSE: ${(e.data as unknown as Finding).message}`);
    const halts = eventsOf(dir, 'auto_halt');
    assert.equal(halts.length, 1);
    assert.equal(halts[0].data.signature_id, 'ENTROPY_COLLAPSE');
    assert.deepEqual(halts[0].data.finding, JSON.parse(JSON.stringify(halt)));
    assert.equal(halts[0].step, halt.last_step);
    assert.equal(halts[0].message, reason.message);

    // one code path: the closed run, diagnosed offline, shows the same problem from the same onset
    const offline = diagnose(RunReader.open(dir));
    assert.deepEqual(codes(offline), ['ENTROPY_COLLAPSE:critical']);
    assert.equal(offline.points, logged);
    assert.equal(offline.findings[0].onset_step, halt.onset_step);
  });

  test("haltOn 'never' reports findings as events but never halts", async () => {
    const dir = path.join(tempDir('rlprobe-live-never-'), 'run');
    const rec = new Recorder(dir, { ...LIVE, doctor: { ...LIVE_DOCTOR, haltOn: 'never' } });
    const seen: Finding[] = [];
    rec.onFinding((f) => seen.push(f));
    const logged = await recordPoints(rec, injectEntropyCollapse(healthyGrpo({ seed: 32, steps: STEPS }), ONSET), {
      delayMs: 5,
      every: 10,
      stopOnHalt: true,
    });
    rec.close();
    assert.equal(logged, STEPS, 'the loop was never told to stop');
    assert.equal(rec.haltSignal.aborted, false);
    assert.equal(rec.haltedBy, null);
    assert.ok(seen.some((f) => f.code === 'ENTROPY_COLLAPSE' && f.severity === 'critical'), JSON.stringify(seen.map((f) => [f.code, f.severity])));
    const findings = eventsOf(dir, 'finding');
    assert.equal(findings.length, seen.length);
    assert.ok(findings.some((e) => e.data.code === 'ENTROPY_COLLAPSE' && e.data.severity === 'critical'));
    assert.deepEqual(eventsOf(dir, 'auto_halt'), []);
  });

  test('a healthy live run never halts and records no warn or critical finding', async () => {
    const dir = path.join(tempDir('rlprobe-live-healthy-'), 'run');
    const rec = new Recorder(dir, { ...LIVE, doctor: LIVE_DOCTOR });
    const seen: Finding[] = [];
    rec.onFinding((f) => seen.push(f));
    const logged = await recordPoints(rec, healthyGrpo({ seed: 33, steps: STEPS }), { delayMs: 5, every: 10, stopOnHalt: true });
    rec.close();
    assert.equal(logged, STEPS);
    assert.equal(rec.haltSignal.aborted, false);
    assert.equal(rec.haltedBy, null);
    assert.deepEqual(seen.filter((f) => f.severity !== 'info'), []);
    assert.deepEqual(eventsOf(dir, 'finding').filter((e) => e.data.severity !== 'info'), []);
    assert.deepEqual(eventsOf(dir, 'auto_halt'), []);
    assert.equal(eventsOf(dir, 'recorder_close').length, 1);
  });

  test('a non-zero rank (recordAllRanks) has no live doctor, though its own data shows the collapse', async () => {
    const dir = path.join(tempDir('rlprobe-live-rank-'), 'run');
    const rec = new Recorder(dir, { ...LIVE, rank: 1, worldSize: 2, recordAllRanks: true, doctor: LIVE_DOCTOR });
    assert.equal(rec.runDir, path.join(path.resolve(dir), 'rank-001'));
    const seen: Finding[] = [];
    rec.onFinding((f) => seen.push(f));
    const logged = await recordPoints(rec, injectEntropyCollapse(healthyGrpo({ seed: 34, steps: STEPS }), ONSET), {
      delayMs: 5,
      every: 10,
      stopOnHalt: true,
    });
    // more than enough poll intervals for a finding to arrive, had there been a doctor
    await new Promise((resolve) => setTimeout(resolve, 200));
    rec.close();
    assert.equal(logged, STEPS);
    assert.equal(rec.haltSignal.aborted, false);
    assert.equal(rec.haltedBy, null);
    assert.deepEqual(seen, []);
    const rankEvents = readFileSync(path.join(rec.runDir, 'events.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as RunEvent);
    assert.ok(rankEvents.some((e) => e.kind === 'recorder_close' && e.rank === 1), 'the rank recorded and closed');
    assert.deepEqual(rankEvents.filter((e) => e.kind === 'finding' || e.kind === 'auto_halt'), []);
    // the data was there: the rank's own sub-recording diagnoses as a collapse offline
    assert.deepEqual(codes(diagnose(RunReader.open(rec.runDir))), ['ENTROPY_COLLAPSE:critical']);
  });

  test('doctor options are validated, naming the option', () => {
    const dir = path.join(tempDir('rlprobe-live-options-'), 'never-created');
    throwsCode(() => new Recorder(dir, { ...QUIET, doctor: { haltOn: 'sometimes' as 'never' } }), 'RLPROBE_INVALID_OPTION', /doctor\.haltOn.*"sometimes"/);
    throwsCode(() => new Recorder(dir, { ...QUIET, doctor: { live: true, pollMs: 5 } }), 'RLPROBE_INVALID_OPTION', /doctor\.pollMs.*5/);
    throwsCode(() => new Recorder(dir, { ...QUIET, doctor: { minConfidence: 1.5 } }), 'RLPROBE_INVALID_OPTION', /doctor\.minConfidence.*1\.5/);
    throwsCode(() => new Recorder(dir, { ...QUIET, doctor: { evaluateEvery: 0 } }), 'RLPROBE_INVALID_OPTION', /doctor\.evaluateEvery/);
    throwsCode(() => new Recorder(dir, { ...QUIET, doctor: 'live' as never }), 'RLPROBE_INVALID_OPTION', /option doctor: .*"live"/);
    // a recorder without live diagnosis: a signal that never aborts, a no-op subscription
    const rec = new Recorder(path.join(tempDir('rlprobe-live-off-'), 'run'), { ...QUIET, captureEnvironment: false });
    assert.equal(rec.options.doctor.live, false);
    assert.equal(rec.haltSignal.aborted, false);
    assert.equal(typeof rec.onFinding(() => undefined), 'function');
    rec.close();
  });

  test(
    'an unknown key inside doctor names doctor.<key> and its value',
    () => {
      const dir = path.join(tempDir('rlprobe-live-options-'), 'never-created');
      throwsCode(() => new Recorder(dir, { ...QUIET, doctor: { live: true, foo: 1 } as never }), 'RLPROBE_INVALID_OPTION', /doctor\.foo.*1/);
    },
  );
});
