/**
 * `probe report` (issue 5) without a browser: downsampling that keeps spikes, the chart
 * groups, the gathered report (findings marked on charts, evidence and forensics samples,
 * events on the step axis, diff), a self-contained and escaped HTML file, the Markdown
 * summary, and the CLI. test/report-browser.test.ts opens the HTML in Chromium.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Recorder, RunReader, buildReport, renderHtml, renderMarkdown } from '../ts/index.js';
import { chartGroups } from '../ts/report/chart-groups.js';
import { seriesColour } from '../ts/report/colours.js';
import { compact, downsample, downsampleBand, stepRows } from '../ts/report/downsample.js';
import { fileHref } from '../ts/report/file-links.js';
import { sparkline } from '../ts/report/markdown.js';
import { renderRunsHtml } from '../ts/report/runs-html.js';
import { renderRunsMarkdown } from '../ts/report/runs-markdown.js';
import { buildRunsReport, runLabels } from '../ts/report/runs-report.js';
import { throwsCode } from './helpers/errors.js';
import { QUIET, ROOT, cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';
import { prng } from './helpers/prng.js';
import { PASS_NAME, buildPassingTrial } from './helpers/trial-fixtures.js';
import { HOSTILE_STEP, HOSTILE_TEXT, STEPS, TRUNCATION_ONSET, recordReportRun } from './helpers/report-runs.js';

let run = '';
let healthy = '';

before(() => {
  run = recordReportRun('truncation');
  healthy = recordReportRun('healthy', { collapse: 'none', seed: 5 });
});
after(cleanupTempDirs);

describe('memory bounded by design', () => {
  test('a one-run report reads its charts a few columns at a time, never the whole step table, with the same charts', async (t) => {
    const whole = RunReader.open(run).view();
    const proto = RunReader.prototype as unknown as { stepTable(columns?: string[]): unknown };
    const original = proto.stepTable;
    const asked: Array<string[] | undefined> = [];
    proto.stepTable = function (this: RunReader, columns?: string[]) {
      asked.push(columns);
      return original.call(this, columns);
    };
    t.after(() => {
      proto.stepTable = original;
    });
    const report = await buildReport(RunReader.open(run), { samples: false });
    proto.stepTable = original;
    assert.ok(asked.length > 2, `read in groups (${asked.length} reads)`);
    for (const columns of asked) {
      assert.ok(columns !== undefined, 'no read of every column');
      assert.ok(columns.length <= 7, `at most 6 columns and the step a read: ${columns.join(', ')}`);
    }
    // the charts are what the whole table gives
    assert.equal(report.run.step_columns, whole.columns().length);
    const specs = chartGroups(whole);
    assert.deepEqual(report.charts.map((c) => c.id), specs.map((c) => c.id));
    const ds = downsample(whole.steps, [whole.series('loss')], 1000);
    const loss = report.charts.find((c) => c.id === 'loss')!;
    assert.deepEqual(loss.values[0], ds.ys[0]);
    assert.deepEqual(report.x.run, ds.x);
  });
});

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
    // the first section is the first finding's onset, then the baseline and the last step
    const steps = r.forensics.map((f) => f.step);
    assert.match(r.forensics[0].why[0], new RegExp(`^onset of ${r.diagnosis.findings[0].code}`));
    assert.ok(steps.includes(0) && steps.at(-1) === STEPS - 1, `steps ${steps}`);
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

/** The HTML of each samples section (a `forensic-step`), in page order. */
function sampleSections(html: string): string[] {
  const forensics = html.slice(html.indexOf('<section id="forensics">'), html.indexOf('</section>', html.indexOf('<section id="forensics">')));
  return forensics.split('<div class="forensic-step"').slice(1);
}

/** The HTML of finding block `id` (up to the next finding, the skipped list or the section's end). */
function findingHtml(html: string, id: string): string {
  const from = html.indexOf(`id="${id}"`);
  assert.ok(from >= 0, `no ${id}`);
  const ends = [html.indexOf('<details class="finding', from + 1), html.indexOf('<details class="skipped"', from), html.indexOf('</section>', from)].filter((i) => i > 0);
  return html.slice(from, Math.min(...ends));
}

/** The report data the page's script draws from. */
function pageData(html: string): { x: { run: number[] }; charts: Array<{ id: string; series: Array<{ label: string; color: string }>; values: Array<Array<number | null>>; bands: Array<{ label: string; lo: unknown[]; hi: unknown[] }>; marks: Array<{ label: string; target: string; step: number }> }> } {
  return JSON.parse(html.match(/<script type="application\/json" id="report-data">(.*?)<\/script>/s)![1]) as ReturnType<typeof pageData>;
}

describe('issue 20: the report says what it means', { concurrency: true }, () => {
  test('sample cards: every evidence sample and the first card of each samples section open; the first section is the first finding\'s onset', async () => {
    const r = await buildReport(RunReader.open(run));
    const html = renderHtml(r);
    const first = r.diagnosis.findings[0];
    assert.equal(r.forensics[0].why[0], `onset of ${first.code} (step ${first.onset_step})`);
    const sections = sampleSections(html);
    assert.equal(sections.length, r.forensics.length);
    assert.match(sections[0], new RegExp(`<h3>Step ${r.forensics[0].step}</h3>`));
    sections.forEach((s, k) => {
      const cards = [...s.matchAll(/<details class="texts"( open)?>/g)].map((m) => m[1] === ' open');
      assert.ok(cards.length > 1, `section ${k}: ${cards.length} cards`);
      assert.deepEqual(cards, cards.map((_, i) => i === 0), `section ${k}: only the first card open`);
    });
    r.diagnosis.findings.forEach((f, i) => {
      const cards = [...findingHtml(html, `finding-${i}`).matchAll(/<details class="texts"( open)?>/g)].map((m) => m[1] === ' open');
      assert.equal(cards.length, f.samples.length, `${f.code}: one card per evidence sample`);
      assert.ok(cards.every(Boolean), `${f.code}: every evidence sample open`);
    });
    // without findings the baseline step leads, as before
    const h = await buildReport(RunReader.open(healthy));
    assert.equal(h.forensics[0].step, 0);
  });

  test('the reward spread is a band mean ± std on the reward axis, never a line on a second axis', async () => {
    for (const c of chartGroups(RunReader.open(run).view())) {
      for (const s of c.series) assert.ok(!s.column.endsWith('_std'), `${c.id} draws ${s.column} as a line`);
    }
    const view = RunReader.open(run).view();
    const mean = view.series('reward_mean');
    const std = view.series('reward_std');
    const close = (a: unknown, b: number) => typeof a === 'number' && Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(b));
    const r = await buildReport(RunReader.open(run), { samples: false });
    const reward = r.charts.find((c) => c.id === 'reward')!;
    assert.deepEqual(reward.axes, ['reward', null]);
    assert.ok(reward.series.every((s) => s.axis === 0));
    assert.equal(reward.bands.length, 1);
    const band = reward.bands[0];
    assert.equal(band.column, 'reward_std');
    assert.equal(reward.series[band.of].column, 'reward_mean');
    for (let i = 0; i < STEPS; i++) {
      assert.ok(close(band.lo[i], mean[i] - std[i]) && close(band.hi[i], mean[i] + std[i]), `step ${i}: [${band.lo[i]}, ${band.hi[i]}] around ${mean[i]} ± ${std[i]}`);
      assert.ok(close(band.values[i], std[i]));
    }
    // the exact figures of the spread stay under the chart
    assert.equal(r.summaries.reward_std.points, STEPS);
    // reduced (10 buckets of 40 steps): each bucket's band covers every mean ± std in it
    const coarse = (await buildReport(RunReader.open(run), { samples: false, buckets: 10 })).charts.find((c) => c.id === 'reward')!;
    const lo = coarse.bands[0].lo;
    const hi = coarse.bands[0].hi;
    assert.equal(lo.length, 20);
    for (let b = 0; b < 10; b++) {
      let min = Infinity;
      let max = -Infinity;
      for (let i = 40 * b; i < 40 * (b + 1); i++) {
        min = Math.min(min, mean[i] - std[i]);
        max = Math.max(max, mean[i] + std[i]);
      }
      assert.ok(close(lo[2 * b], min) && close(lo[2 * b + 1], min), `bucket ${b} low`);
      assert.ok(close(hi[2 * b], max) && close(hi[2 * b + 1], max), `bucket ${b} high`);
    }
  });

  test('confidence reads as probe doctor prints it (99%), in the HTML and the Markdown', async () => {
    const [r, doctor] = await Promise.all([buildReport(RunReader.open(run), { samples: false }), runCli(['doctor', run])]);
    const cli = new Map([...doctor.stdout.matchAll(/^\S+\s+(\w+)\s+onset ~step \d+\s+confidence (\d+%)/gm)].map((m) => [m[1], m[2]]));
    assert.equal(cli.size, r.diagnosis.findings.length, doctor.stdout);
    const html = renderHtml(r);
    const md = renderMarkdown(r);
    for (const f of r.diagnosis.findings) {
      const shown = html.match(new RegExp(`<b>${f.code}</b> from step \\d+ to \\d+ · confidence ([^<]*)<`));
      assert.equal(shown?.[1], cli.get(f.code), `${f.code} in the HTML`);
      assert.match(md, new RegExp(`\\| \\*\\*${f.code}\\*\\* \\| \\d+–\\d+ \\| ${cli.get(f.code)} \\|`));
    }
    assert.ok(!/confidence 0\.\d/.test(html));
  });

  test('Markdown: a constant series draws flat (float rounding is not stretched to full scale)', async () => {
    // 80 values in 24 cells: slices of 3 and 4, whose means of 0.1 differ in the last bit
    assert.equal(sparkline(Array(80).fill(0.1)), '▁'.repeat(24));
    assert.equal(sparkline(Array.from({ length: 100 }, (_, i) => 1e6 + (i % 3) * 1e-7)), '▁'.repeat(24));
    assert.equal(sparkline([0, 0, 0]), '▁▁▁');
    // a small but real change is still drawn
    const rising = sparkline(Array.from({ length: 100 }, (_, i) => 1 + i * 1e-4));
    assert.ok(rising.startsWith('▁') && rising.endsWith('█'), rising);
    // the run's reward_component.format is logged as 0.2 at every step
    const md = renderMarkdown(await buildReport(RunReader.open(run), { samples: false }));
    const row = md.split('\n').find((l) => l.startsWith('| reward_component.format |'))!;
    assert.equal(row.split('|').at(-2)!.trim(), '▁'.repeat(24), row);
  });

  test('trial links are relative to the report (a shared folder keeps working); on standard output, relative to the current directory', async () => {
    const base = tempDir('rlprobe-report-trials-');
    const share = path.join(base, 'share');
    const dir = path.join(share, 'exp 1', 'run');
    const trialDir = path.join(base, 'trials', PASS_NAME);
    buildPassingTrial(trialDir);
    const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false, runId: 'trial', algorithm: 'grpo' });
    for (let step = 0; step < 6; step++) rec.logStep({ step, reward_mean: step / 10 });
    rec.logSamples([{ sample_id: 's-17', prompt_text: 'p', completion_text: 'c', reward_total: 1 }], { step: 3, select: false });
    await rec.captureTrial(trialDir, { step: 3, sampleId: 's-17', groupId: 'g-3' });
    rec.close();
    const out = path.join(share, 'reports', 'r.html');
    mkdirSync(path.dirname(out));
    const cli = await runCli(['report', dir, '--steps', '3', '--out', out, '--format', 'both']);
    assert.equal(cli.code, 0, cli.stderr);
    const html = readFileSync(out, 'utf8');
    const md = readFileSync(out.replace(/\.html$/, '.md'), 'utf8');
    const htmlLinks = [...html.matchAll(/href="([^"#][^"]*)"/g)].map((m) => m[1]).filter((h) => !h.startsWith('data:'));
    const mdLinks = [...md.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]).filter((h) => h !== 'r.html');
    // the step's trial list and the sample's card: the capture and its trajectory each
    assert.equal(htmlLinks.length, 4, htmlLinks.join(' '));
    assert.equal(mdLinks.length, 1, md);
    // the whole folder moved (shared, unpacked elsewhere): every link still opens its file
    const moved = path.join(base, 'moved');
    renameSync(share, moved);
    for (const h of [...htmlLinks, ...mdLinks]) {
      assert.ok(!h.startsWith('file:') && !path.isAbsolute(h), h);
      const target = path.resolve(moved, 'reports', decodeURIComponent(h));
      assert.ok(target.startsWith(path.join(moved, 'exp 1', 'run')) && existsSync(target), `${h} → ${target}`);
    }
    // standard output: relative to where probe ran (the tests run it in the repository)
    const stdout = await runCli(['report', path.join(moved, 'exp 1', 'run'), '--steps', '3', '--format', 'md']);
    assert.equal(stdout.code, 0, stdout.stderr);
    const links = [...stdout.stdout.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]);
    assert.equal(links.length, 1, stdout.stdout);
    assert.ok(existsSync(path.resolve(ROOT, decodeURIComponent(links[0]))), links[0]);
  });

  test('probe report A B: one chart per metric with a line per run (aligned by step, own colour), each run\'s findings labelled', async () => {
    const out = path.join(tempDir('rlprobe-report-runs-'), 'runs.html');
    const cli = await runCli(['report', run, healthy, '--out', out]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /^wrote .*runs\.html \([\d.]+ [KM]iB\): 2 runs, \d+ charts, \d+ findings/);
    const html = readFileSync(out, 'utf8');
    const data = pageData(html);
    const [a, b] = await Promise.all([buildReport(RunReader.open(run), { samples: false }), buildReport(RunReader.open(healthy), { samples: false })]);
    const reward = data.charts.find((c) => c.id === 'metric-reward-mean')!;
    assert.ok(reward, data.charts.map((c) => c.id).join());
    assert.deepEqual(reward.series.map((s) => s.label), ['truncation', 'healthy']);
    assert.notEqual(reward.series[0].color, reward.series[1].color);
    // both runs log steps 0..399: the shared axis is those steps, each line its run's values
    assert.deepEqual(data.x.run, a.x.run);
    const single = (r: typeof a) => r.charts.find((c) => c.id === 'reward')!.values[0];
    assert.deepEqual(reward.values, [single(a), single(b)]);
    // each run's spread is a band in its colour
    assert.deepEqual(reward.bands.map((x) => x.label), ['truncation ± reward_std', 'healthy ± reward_std']);
    // findings: per run, labelled, marked on the charts of their columns
    const trunc = a.diagnosis.findings.findIndex((f) => f.code === 'TRUNCATION_COLLAPSE');
    assert.match(html, /<h3[^>]*id="run1-findings"[^>]*>.*truncation/);
    assert.match(findingHtml(html, `run1-finding-${trunc}`), /TRUNCATION_COLLAPSE/);
    assert.match(html.slice(html.indexOf('id="run2-findings"')), /^[^]*?No problems found in 400 logged points/);
    const truncation = data.charts.find((c) => c.id === 'metric-truncation-rate')!;
    assert.ok(truncation.marks.some((m) => m.label === 'truncation: TRUNCATION_COLLAPSE' && m.target === `run1-finding-${trunc}`));
    assert.ok(data.charts.every((c) => c.marks.every((m) => m.label.startsWith('truncation: ') && m.target.startsWith('run1-'))), 'the healthy run has no marks');
    // Markdown: each run's findings under its name
    const md = await runCli(['report', run, healthy, '--format', 'md', '--no-samples']);
    assert.equal(md.code, 0, md.stderr);
    assert.match(md.stdout, /^# rlprobe report: 2 runs/);
    assert.match(md.stdout, /### truncation: \d+ findings?\n\n\| severity[^]*\*\*TRUNCATION_COLLAPSE\*\*/);
    assert.match(md.stdout, /### healthy: no findings\n\nNo problems found in 400 logged points/);
    assert.match(md.stdout, /^\| reward_mean \| healthy \| /m);
    // a diff section compares exactly two runs
    const against = await runCli(['report', run, healthy, '--against', healthy]);
    assert.equal(against.code, 64);
    assert.match(against.stderr, /--against compares one run with another: give one run \(got 2\)/);
  });

  test('probe report A B with runs of other lengths: aligned by step, at most 2 × buckets points a series, spikes kept', async () => {
    const base = tempDir('rlprobe-report-align-');
    const record = (name: string, steps: number[], value: (s: number) => number) => {
      const dir = path.join(base, name);
      const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false, runId: name, algorithm: 'grpo' });
      steps.forEach((step, i) => {
        rec.logStep({ step, reward_mean: value(step) });
        // a tight loop outruns the writer's bounded queue: without a flush now and then the
        // recorder drops (and counts) steps, and the spike may be one of them
        if (i % 2000 === 1999) rec.flushSync();
      });
      assert.equal(rec.close().counters.dropped, 0, `${name}: no step dropped`);
      return dir;
    };
    const long = record('long', Array.from({ length: 20_000 }, (_, i) => i), (s) => (s === 12_345 ? 100 : Math.sin(s / 500)));
    const late = record('late', Array.from({ length: 3000 }, (_, i) => 8000 + 2 * i), (s) => (s === 9000 ? -100 : 0.5));
    const out = path.join(base, 'runs.html');
    const cli = await runCli(['report', long, late, '--out', out, '--buckets', '100']);
    assert.equal(cli.code, 0, cli.stderr);
    const data = pageData(readFileSync(out, 'utf8'));
    const c = data.charts.find((x) => x.id === 'metric-reward-mean')!;
    assert.ok(data.x.run.length <= 200, `${data.x.run.length} points`);
    assert.ok(data.x.run.every((x, i) => i === 0 || x > data.x.run[i - 1]), 'one ascending step axis');
    for (const v of c.values) assert.equal(v.length, data.x.run.length);
    // the spike and the dip, each near its step (a bucket is 200 steps here)
    const at = (k: number, v: number) => data.x.run[c.values[k].indexOf(v)];
    assert.ok(Math.abs(at(0, 100) - 12_345) <= 200, `spike at ${at(0, 100)}`);
    assert.ok(Math.abs(at(1, -100) - 9000) <= 200, `dip at ${at(1, -100)}`);
    // the late run is drawn only where it logged
    const drawn = data.x.run.filter((_, i) => c.values[1][i] !== null);
    assert.ok(drawn[0] >= 7800 && drawn.at(-1)! <= 14_200, `late run drawn over ${drawn[0]}–${drawn.at(-1)}`);
  });
});

describe('issue 20: the parts', () => {
  test('chart groups: a spread without its mean has a chart of its own; an extra x_std is a band on x_mean (or x)', () => {
    const dir = path.join(tempDir('rlprobe-report-spreads-'), 'run');
    const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false });
    for (let step = 0; step < 5; step++) {
      rec.logStep({ step, reward_std: 0.2, adv_mean: 0, adv_std: 1, extra: { acc_std: 0.1, acc_mean: 0.5, 'tok/s_std': 3, 'tok/s': 100, lone_std: 1 } });
    }
    rec.close();
    const charts = chartGroups(RunReader.open(dir).view());
    const byId = new Map(charts.map((c) => [c.id, c]));
    assert.deepEqual(byId.get('reward-spread')?.series.map((s) => [s.column, s.axis]), [['reward_std', 0]]);
    assert.deepEqual(byId.get('advantages')?.bands, [{ of: 0, column: 'adv_std', label: 'adv_mean ± adv_std' }]);
    assert.deepEqual(byId.get('extra-acc-mean')?.bands, [{ of: 0, column: 'extra.acc_std', label: 'acc_mean ± acc_std' }]);
    assert.deepEqual(byId.get('extra-tok-s')?.bands, [{ of: 0, column: 'extra.tok/s_std', label: 'tok/s ± tok/s_std' }]);
    assert.ok(byId.has('extra-lone-std'), 'a spread of nothing charted is a line of its own');
    assert.ok(!byId.has('extra-acc-std') && !byId.has('extra-tok-s-std'));
  });

  test('downsampleBand: rows of a resumed run at their last write, missing values as gaps, a negative spread as its size', () => {
    const steps = [0, 1, 2, 1, 2, 3];
    const mean = [0, 1, 2, 10, 20, NaN];
    const spread = [1, 1, -1, 2, 2, 1];
    assert.deepEqual(downsampleBand(steps, mean, spread, 1000), { lo: [-1, 8, 18, null], hi: [1, 12, 22, null] });
    // reduced: the x of downsample, each bucket's outer bounds at both its points
    const n = 1000;
    const s = Array.from({ length: n }, (_, i) => i);
    const m = s.map((i) => (i === 123 ? 50 : 0));
    const band = downsampleBand(s, m, s.map(() => 1), 10);
    assert.equal(band.lo.length, downsample(s, [m], 10).x.length);
    assert.deepEqual([band.lo[2], band.hi[2], band.hi[3]], [-1, 51, 51]);
  });

  test('several runs: labels unique, colours distinct, the settings that differ listed', async () => {
    assert.deepEqual(runLabels([{ id: 'a', dir: 'x/a' }, { id: 'a', dir: 'y/a' }, { id: 'b', dir: 'b' }, { id: 'b', dir: 'b' }]), ['a (x/a)', 'a (y/a)', 'b (b) #3', 'b (b) #4']);
    const colours = Array.from({ length: 40 }, (_, i) => seriesColour(i));
    assert.equal(new Set(colours).size, 40);
    assert.ok(colours.every((c) => /^#[0-9a-f]{6}$/.test(c)), colours.join());
    const b = recordReportRun('entropy', { collapse: 'entropy' });
    const other = path.join(tempDir('rlprobe-report-settings-'), 'run');
    const rec = new Recorder(other, { ...QUIET, captureEnvironment: false, runId: 'other', algorithm: 'ppo', trainerConfig: { lr: 2e-6, beta: 0.04, sched: { warmup: 10 } } });
    rec.logStep({ step: 0, reward_mean: 1 });
    rec.close();
    const rr = await buildRunsReport([RunReader.open(healthy), RunReader.open(b), RunReader.open(other)], { samples: false });
    assert.deepEqual(rr.runs.map((r) => [r.label, r.prefix, r.color]), [['healthy', 'run1-', seriesColour(0)], ['entropy', 'run2-', seriesColour(1)], ['other', 'run3-', seriesColour(2)]]);
    assert.deepEqual(rr.differences, [
      { key: 'algorithm', values: ['grpo', 'grpo', 'ppo'] },
      { key: 'model_name', values: ['qwen2.5-0.5b', 'qwen2.5-0.5b', null] },
      { key: 'trainer_config.lr', values: [1e-6, 1e-6, 2e-6] },
      { key: 'trainer_config.note', values: ['</script><script>window.__pwned = 3</script>', '</script><script>window.__pwned = 3</script>', undefined] },
      { key: 'trainer_config.sched.warmup', values: [undefined, undefined, 10] },
    ]);
    // the third run logged one metric once: on the charts it logged, a line of its own; nowhere else
    const reward = rr.charts.find((c) => c.id === 'metric-reward-mean')!;
    assert.deepEqual(reward.series.map((s) => s.label), ['healthy', 'entropy', 'other']);
    assert.deepEqual(rr.charts.find((c) => c.id === 'metric-kl-mean')!.series.map((s) => s.label), ['healthy', 'entropy']);
    const html = renderRunsHtml(rr);
    assert.ok(!html.includes('<script>window.__pwned'), 'settings are escaped');
    assert.match(html, /<section id="differences">.*<code>trainer_config\.sched\.warmup<\/code><\/td><td><span class="muted">not set<\/span>/s);
    const md = renderRunsMarkdown(rr);
    assert.match(md, /^\| `trainer_config.lr` \| `0.000001` \| `0.000001` \| `0.000002` \|$/m);
    assert.match(md, /### entropy: \d+ findings?\n\n[^]*\*\*ENTROPY_COLLAPSE\*\*/);
  });

  test('fileHref: relative and encoded; absolute file:// only when asked', () => {
    assert.equal(fileHref('/a/b/run (1)/trials/x#1', '/a/b/reports'), '../run%20%281%29/trials/x%231');
    assert.equal(fileHref('/a/b', '/a/b'), './');
    assert.equal(fileHref('/a/b c', null), 'file:///a/b%20c');
  });
});
