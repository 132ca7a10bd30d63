/**
 * `probe report` (issue 5) without a browser: downsampling that keeps spikes, the chart
 * groups, the gathered report (findings marked on charts, evidence and forensics samples,
 * events on the step axis, diff), a self-contained and escaped HTML file, the Markdown
 * summary, and the CLI. test/report-browser.test.ts opens the HTML in Chromium.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Recorder, RunReader, buildReport, renderHtml, renderMarkdown } from '../ts/index.js';
import { chartGroups } from '../ts/report/chart-groups.js';
import { compact, downsample, stepRows } from '../ts/report/downsample.js';
import { sparkline } from '../ts/report/markdown.js';
import { throwsCode } from './helpers/errors.js';
import { QUIET, cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';
import { prng } from './helpers/prng.js';
import { HOSTILE_STEP, HOSTILE_TEXT, STEPS, TRUNCATION_ONSET, recordReportRun } from './helpers/report-runs.js';

let run = '';
let healthy = '';

before(() => {
  run = recordReportRun('truncation');
  healthy = recordReportRun('healthy', { collapse: 'none', seed: 5 });
});
after(cleanupTempDirs);

describe('downsampling', () => {
  test('1,000,000 steps become at most 2 × buckets points, and a one-step spike and dip survive', () => {
    const n = 1_000_000;
    const u = prng(11);
    const steps = Float64Array.from({ length: n }, (_, i) => i);
    const xs = Float64Array.from({ length: n }, () => 1 + 0.01 * u());
    xs[654_321] = 50; // one-step grad-norm spike
    xs[123_457] = -7;
    xs[900_000] = NaN; // a logged NaN is left out, not drawn as a value
    const sparse = new Float64Array(n).fill(NaN);
    for (let i = 0; i < n; i += 5000) sparse[i] = i; // logged every 5,000 steps
    const d = downsample(steps, [xs, sparse], 1000);
    assert.equal(d.reduced, true);
    assert.equal(d.x.length, 2000);
    assert.ok(d.ys[0].includes(50) && d.ys[0].includes(-7));
    assert.ok(d.ys[0].every((v) => v === null || Number.isFinite(v)));
    // x ascending, every bucket's pair inside it
    assert.ok(d.x.every((x, i) => i === 0 || x >= d.x[i - 1]));
    // a sparse series keeps all its points (one per bucket at most here) and nulls elsewhere
    assert.equal(new Set(d.ys[1].filter((v) => v !== null)).size, n / 5000);
    // min and max in the order they happened: the spike's bucket rises then falls back
    const k = d.ys[0].indexOf(50);
    assert.ok(d.x[k] >= 654_000 && d.x[k] <= 655_000, `spike drawn at step ${d.x[k]}`);
  });

  test('short series are drawn whole; unsorted steps are sorted; non-finite values become gaps', () => {
    const d = downsample([3, 1, 2], [[30, 10, Infinity]], 1000);
    assert.deepEqual(d, { x: [1, 2, 3], ys: [[10, null, 30]], rows: 3, reduced: false });
  });

  test('a resumed run that logged steps again is drawn once per step, at its last write', () => {
    // steps 0..4, then resumed from step 2: 2..5 logged again with other values
    const steps = [0, 1, 2, 3, 4, 2, 3, 4, 5];
    const vals = [0, 1, 2, 3, 4, 20, 30, 40, 50];
    assert.deepEqual(stepRows(steps), Int32Array.from([0, 1, 5, 6, 7, 8]));
    assert.equal(stepRows([0, 1, 2]), null);
    assert.deepEqual(downsample(steps, [vals], 1000), { x: [0, 1, 2, 3, 4, 5], ys: [[0, 1, 20, 30, 40, 50]], rows: 6, reduced: false });
    const many = downsample([...Array(5000).keys(), ...Array(5000).keys()], [[...Array(5000).fill(1), ...Array(5000).fill(2)]], 100);
    assert.equal(many.x.length, 200);
    assert.ok(many.ys[0].every((v) => v === 2), 'the second write wins everywhere');
  });

  test('values are kept to 6 significant digits, as toPrecision(6) would', () => {
    const u = prng(5);
    for (let i = 0; i < 20_000; i++) {
      const v = (u() - 0.5) * 10 ** Math.floor(u() * 40 - 20);
      assert.equal(String(compact(v)), String(Number(v.toPrecision(6))), String(v));
    }
  });
});

describe('report', { concurrency: true }, () => {
  test('charts: every logged group, components, extras one each; list columns and unlogged fields left out', () => {
    const view = RunReader.open(run).view();
    const charts = chartGroups(view);
    const ids = charts.map((c) => c.id);
    assert.deepEqual(ids, ['reward', 'reward-components', 'kl', 'entropy', 'groups', 'clipping', 'lengths', 'loss', 'gradients', 'throughput', 'extra-eval-acc']);
    const lengths = charts.find((c) => c.id === 'lengths')!;
    assert.deepEqual(lengths.series.map((s) => [s.column, s.axis]), [['completion_len_mean', 0], ['completion_len_max', 0], ['truncation_rate', 1]]);
    assert.deepEqual(lengths.axes, ['tokens', 'fraction']);
    assert.deepEqual(charts.find((c) => c.id === 'reward-components')!.series.map((s) => s.label), ['correctness', 'format']);
    assert.ok(!charts.some((c) => c.series.some((s) => s.column === 'kl_positional' || s.column === 'timestamp')));
  });

  test('the report: findings marked at their onset on the charts of their columns, evidence and forensics samples, events placed on steps', async () => {
    const stages: string[] = [];
    const r = await buildReport(RunReader.open(run), { onProgress: (done, total, stage) => stages.push(`${done}/${total} ${stage}`) });
    assert.deepEqual(stages, ['0/5 reading steps, diagnosing', '1/5 downsampling charts', '2/5 reading samples', '3/5 reading events', '4/5 rendering']);
    const trunc = r.diagnosis.findings.find((f) => f.code === 'TRUNCATION_COLLAPSE');
    assert.ok(trunc, `findings: ${r.diagnosis.findings.map((f) => f.code)}`);
    assert.ok(Math.abs(trunc.onset_step - TRUNCATION_ONSET) <= 10, `onset ${trunc.onset_step}`);
    const i = r.diagnosis.findings.indexOf(trunc);
    const lengths = r.charts.find((c) => c.id === 'lengths')!;
    assert.deepEqual(
      lengths.marks.find((m) => m.target === `finding-${i}`),
      { step: trunc.onset_step, to: trunc.last_step, label: 'TRUNCATION_COLLAPSE', kind: 'critical', target: `finding-${i}` },
    );
    assert.ok(!r.charts.find((c) => c.id === 'kl')!.marks.some((m) => m.target === `finding-${i}`), 'a finding is marked on the charts of its columns only');
    // evidence samples read back in full
    assert.ok(trunc.samples.length > 0);
    for (const s of trunc.samples) {
      const rec = r.evidence[`${s.step}/${s.sample_id}`];
      assert.ok(rec, `evidence ${s.step}/${s.sample_id}`);
      assert.equal(rec.truncated, true);
      assert.equal(typeof rec.completion_text, 'string');
    }
    // forensics: first and last sampled steps and the onsets, at most 4 per reason
    const steps = r.forensics.map((f) => f.step);
    assert.equal(steps[0], 0);
    assert.equal(steps.at(-1), STEPS - 1);
    assert.ok(r.forensics.some((f) => f.why.some((w) => w.startsWith('onset of TRUNCATION_COLLAPSE'))));
    for (const f of r.forensics) {
      assert.ok(f.samples.length > 0 && f.samples.length <= 4 * Object.keys(f.stored).length);
      assert.ok(f.samples.every((s) => s.step === f.step));
    }
    // exact figures beside the downsampled charts
    assert.equal(r.summaries.reward_mean.points, STEPS);
    assert.equal(r.summaries['extra.eval/acc'].points, STEPS / 10);
    assert.equal(r.summaries['extra.eval/acc'].last, 0.3 + 390 / 2000);
    // events: by step when they have one, else by their time among the steps'
    const checkpoint = r.events.listed.find((e) => e.kind === 'checkpoint')!;
    assert.equal(checkpoint.at_step, 200);
    const evalEvent = r.events.listed.find((e) => e.kind === 'eval')!;
    assert.equal(evalEvent.step, null);
    assert.equal(evalEvent.at_step, STEPS - 1);
    assert.equal(r.events.by_kind.recorder_close, 1);
    assert.equal(r.run.status.state, 'closed');
  });

  test('the HTML is one self-contained file: nothing fetched, untrusted text escaped, every chart has its data', async () => {
    const r = await buildReport(RunReader.open(run), { steps: [HOSTILE_STEP] });
    const html = renderHtml(r);
    assert.doesNotMatch(html, /<(script|link|img|iframe)[^>]+(src|href)=["']?(https?:)?\/\//i, 'no network resource');
    assert.doesNotMatch(html, /<script[^>]+src=/i);
    assert.equal(html.match(/<script>/g)?.length, 2, 'uPlot and the report script, inlined');
    // the hostile completion is shown as text, never as markup
    assert.ok(!html.includes(HOSTILE_TEXT));
    assert.ok(html.includes('&lt;/script&gt;&lt;script&gt;window.__pwned = 1&lt;/script&gt;'));
    assert.ok(!html.includes('<script>window.__pwned'));
    assert.ok(html.includes('&lt;!-- not a comment --&gt;'));
    // the inlined data parses back and matches the charts
    const json = html.match(/<script type="application\/json" id="report-data">(.*?)<\/script>/s)![1];
    const data = JSON.parse(json) as { x: { run: number[] }; charts: Array<{ id: string; values: unknown[][]; marks: unknown[] }> };
    assert.deepEqual(data.charts.map((c) => c.id), r.charts.map((c) => c.id));
    assert.equal(data.x.run.length, STEPS);
    for (const c of data.charts) for (const v of c.values) assert.equal(v.length, STEPS);
    assert.equal(html.match(/class="chart" data-chart=/g)?.length, r.charts.length);
    assert.ok(html.includes('id="finding-0"'));
    const trunc = r.diagnosis.findings.findIndex((f) => f.code === 'TRUNCATION_COLLAPSE');
    const block = html.slice(html.indexOf(`id="finding-${trunc}"`), html.indexOf('</details>', html.indexOf(`id="finding-${trunc}"`)));
    assert.match(block, /Marked on: .*<a href="#chart-lengths">Lengths and truncation<\/a>/);
    assert.match(html, /<h3>Step 300<\/h3>/);
    assert.match(html, /class="timeline"/);
    assert.ok(html.includes('&quot;beta&quot;: 0.04'), 'trainer config shown');
  });

  test('a healthy run says so, and its report has no marks', async () => {
    const r = await buildReport(RunReader.open(healthy), { samples: false });
    assert.equal(r.diagnosis.findings.length, 0, r.diagnosis.findings.map((f) => f.code).join());
    assert.ok(r.charts.every((c) => c.marks.length === 0));
    assert.deepEqual(r.forensics, []);
    assert.match(renderHtml(r), /No problems found in 400 logged points/);
    assert.match(renderMarkdown(r), /No problems found in 400 logged points/);
  });

  test('an empty run (no steps yet) still reports', async () => {
    const dir = path.join(tempDir('rlprobe-report-empty-'), 'run');
    new Recorder(dir, { ...QUIET, captureEnvironment: false }).close();
    const r = await buildReport(RunReader.open(dir));
    assert.equal(r.run.rows, 0);
    assert.deepEqual(r.charts, []);
    assert.match(renderHtml(r), /No step metrics logged yet/);
    assert.match(renderMarkdown(r), /0 steps/);
  });

  test('--against: the diff section names the lead indicator and draws A over B at the divergence', async () => {
    const b = recordReportRun('entropy', { collapse: 'entropy' });
    const r = await buildReport(RunReader.open(healthy), { against: RunReader.open(b), samples: false });
    assert.ok(r.diff);
    assert.equal(r.diff.result.lead?.metric, r.diff.result.metrics[0].metric);
    assert.ok(r.diff.result.findings.only_in_b.some((f) => f.code === 'ENTROPY_COLLAPSE'));
    const entropy = r.diff.charts.find((c) => c.title === 'entropy_mean')!;
    assert.ok(entropy, `diff charts: ${r.diff.charts.map((c) => c.title)}`);
    assert.equal(entropy.marks[0].kind, 'divergence');
    assert.ok(entropy.marks[0].step >= 200 && entropy.marks[0].step < 230, `diverges at ${entropy.marks[0].step}`);
    assert.equal(r.x.diff?.length, STEPS);
    const html = renderHtml(r);
    assert.match(html, /<section id="diff">/);
    assert.match(html, /Lead indicator: <b>/);
    const md = renderMarkdown(r);
    assert.match(md, /## Compared with /);
    assert.match(md, /Findings only in B: .*ENTROPY_COLLAPSE/);
  });

  test('Markdown: findings table, remedies, key series with sparklines, a link to the HTML', async () => {
    const r = await buildReport(RunReader.open(run));
    const md = renderMarkdown(r, { htmlLink: 'report.html' });
    assert.match(md, /^# rlprobe report: truncation$/m);
    assert.match(md, /\[HTML report\]\(report\.html\)/);
    assert.match(md, /\| critical \| \*\*TRUNCATION_COLLAPSE\*\* \| \d+–399 \|/);
    assert.match(md, /^- \*\*TRUNCATION_COLLAPSE\*\*: /m);
    const row = md.split('\n').find((l) => l.startsWith('| truncation_rate |'))!;
    const spark = row.split('|').at(-2)!.trim();
    assert.equal(spark.length, 24);
    assert.ok(spark.startsWith('▁') && spark.endsWith('█'), spark);
    assert.equal(sparkline([1, null, 1]), '▁▁');
  });

  test('reader: a set of steps read in one pass, and the sampled steps from the step column alone', () => {
    const reader = RunReader.open(run);
    const ids = (q: Parameters<typeof reader.samples>[0]) => [...reader.samples(q)].map((s) => `${s.step}/${s.sample_id}`).sort();
    assert.deepEqual(ids({ steps: [399, 5, 250, 5] }), [...ids({ step: 5 }), ...ids({ step: 250 }), ...ids({ step: 399 })].sort());
    assert.deepEqual(ids({ steps: [5, 250], stepRange: [100, 300] }), ids({ step: 250 }));
    assert.deepEqual(reader.sampledSteps(), Array.from({ length: STEPS }, (_, i) => i));
    throwsCode(() => reader.samples({ steps: [1, -2] }), 'RLPROBE_INVALID_QUERY', /invalid sample filter steps\.1: .* \(got -2\)/);
  });

  test('bad options name the option and the value', async () => {
    await assert.rejects(buildReport(RunReader.open(run), { buckets: 3 }), (e: Error) => {
      throwsCode(() => {
        throw e;
      }, 'RLPROBE_INVALID_OPTION');
      return /invalid report option buckets: .* \(got 3\)/.test(e.message);
    });
    const cli = await runCli(['report', run, '--steps', '10,x']);
    assert.equal(cli.code, 64);
    assert.match(cli.stderr, /invalid --steps "10,x": expected step numbers separated by commas/);
  });

  test('probe report CLI: --format both writes the HTML and a Markdown linking to it; progress as plain lines off a TTY', async () => {
    const out = path.join(tempDir('rlprobe-report-cli-'), 'exp 1.html');
    const r = await runCli(['report', run, '--out', out, '--format', 'both']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^wrote .*exp 1\.html \([\d.]+ KiB\): 11 charts, \d+ findings, \d+ sample steps, 3 events\n/);
    assert.ok(existsSync(out));
    const md = readFileSync(out.replace(/\.html$/, '.md'), 'utf8');
    assert.match(md, /\[HTML report\]\(exp%201\.html\)/);
    assert.match(r.stderr, /^report 0\/5 reading steps, diagnosing$/m);
    assert.match(r.stderr, /^report 5\/5 done$/m);
    const mdOut = await runCli(['report', run, '--format', 'md', '--no-samples']);
    assert.equal(mdOut.code, 0, mdOut.stderr);
    assert.match(mdOut.stdout, /^# rlprobe report: truncation/);
  });
});
