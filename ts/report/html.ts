/**
 * The report as one self-contained HTML file: uPlot, its stylesheet, the report's own
 * script and the chart data are inlined, so the file opens from disk or an artifact store
 * with no network. Everything but the charts is rendered here, so findings, samples and
 * the manifest read even with scripts blocked.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import type { Finding } from '../doctor/finding.js';
import type { ObjectChange } from '../diff/object-diff.js';
import type { ReportChart, RunReport } from './build-report.js';
import { sampleKey } from './forensics.js';
import { esc, jsonBlock, num, sampleCard, table, trialLine } from './html-parts.js';
import { trialOfSample } from './trial-links.js';
import type { StoredSampleRecord } from '../schema/sample-record.js';
import type { SpanTreeNode } from '../schema/span-record.js';

interface Assets {
  uplotJs: string;
  uplotCss: string;
  clientJs: string;
  clientCss: string;
}

let assets: Assets | null = null;

/** uPlot from node_modules, the report's script and stylesheet from ts/report/client/. */
function loadAssets(): Assets {
  if (assets) return assets;
  const require = createRequire(import.meta.url);
  // ts/report/ and dist/report/ both sit two levels under the package root
  const client = (file: string) => readFileSync(new URL(`../../ts/report/client/${file}`, import.meta.url), 'utf8');
  assets = {
    uplotJs: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    uplotCss: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
    clientJs: client('report.js'),
    clientCss: client('report.css'),
  };
  return assets;
}

/** Inline-script safe: `</script>` or `<!--` inside a string cannot end the element. */
function scriptJson(v: unknown): string {
  return JSON.stringify(v).replace(/</g, '\\u003c');
}

function header(r: RunReport): string {
  const m = r.run.manifest;
  const facts = [
    ['algorithm', m.algorithm],
    ['model', m.model_name ?? '—'],
    ['steps', r.run.rows ? `${r.run.rows.toLocaleString('en-US')} (${r.run.first_step}–${r.run.last_step})` : 'none yet'],
    ['samples', r.run.samples.toLocaleString('en-US')],
    ['world size', String(m.world_size)],
    ['created', m.created_at],
  ];
  const state = r.run.status.state;
  return (
    `<header><h1>${esc(m.run_id)}</h1><div class="status status-${esc(state)}">${esc(r.run.status.summary)}</div>` +
    `<div class="facts">${facts.map(([k, v]) => `<span><b>${esc(k)}</b> ${esc(v)}</span>`).join('')}</div>` +
    `<div class="muted">${esc(r.run.dir)} · report by rlprobe ${esc(r.rlprobe_version)} at ${esc(r.generated_at)}</div></header>`
  );
}

/** Parts of the run that could not be read, and files skipped as foreign: said first. */
function damagedBlock(r: RunReport): string {
  const items = [
    ...r.damaged.map((d) => `<li><b>${esc(d.surface)}</b> could not be read (shown without them): ${esc(d.error)}</li>`),
    ...r.foreign_files.map((f) => `<li><b>skipped</b> <code>${esc(f.path)}</code> (${esc(f.surface)}): ${esc(f.reason)}</li>`),
  ];
  return items.length ? `<div class="damaged"><ul>${items.join('')}</ul></div>` : '';
}

function nav(r: RunReport): string {
  const links: Array<[string, string]> = [
    ['findings', `Findings (${r.diagnosis.findings.length})`],
    ['charts', `Charts (${r.charts.length})`],
    ['forensics', 'Samples'],
    ['events', `Events (${r.events.total})`],
  ];
  if (r.diff) links.push(['diff', 'Compared with B']);
  links.push(['run', 'Run']);
  return `<nav>${links.map(([id, label]) => `<a href="#${id}">${esc(label)}</a>`).join('')}</nav>`;
}

function findingBlock(f: Finding, i: number, r: RunReport): string {
  const evidence = table(
    ['evidence', 'value'],
    Object.entries(f.evidence).map(([k, v]) => [esc(k), esc(num(v))]),
    'evidence',
  );
  const samples = f.samples.map((s) => {
    const rec = r.evidence[sampleKey(s.step, s.sample_id)];
    return rec ? sampleCard(rec, s.why, treeOf(r, rec), trialOfSample(r.trials, rec.step, rec.sample_id, rec.rank ?? 0)) : `<div class="sample missing"><div class="why">${esc(s.why)}</div>step ${esc(s.step)}, sample ${esc(s.sample_id)}: not found in the samples</div>`;
  });
  const cause = f.root_cause ? r.diagnosis.findings.findIndex((x) => x.code === f.root_cause) : -1;
  const rootCause = f.root_cause ? `<p>A consequence of ${cause >= 0 ? `<a href="#finding-${cause}">${esc(f.root_cause)}</a>` : esc(f.root_cause)}.</p>` : '';
  const charts = r.charts.filter((c) => c.marks.some((m) => m.target === `finding-${i}`));
  const shownOn = charts.length ? `<p class="muted">Marked on: ${charts.map((c) => `<a href="#chart-${esc(c.id)}">${esc(c.title)}</a>`).join(', ')}</p>` : '';
  return (
    `<details class="finding sev-${f.severity}" id="finding-${i}"><summary><span class="sev">${esc(f.severity)}</span> <b>${esc(f.code)}</b> ` +
    `from step ${esc(f.onset_step)} to ${esc(f.last_step)} · confidence ${esc(num(f.confidence))}<div class="message">${esc(f.message)}</div></summary>` +
    `<p class="remedy"><b>Remedy:</b> ${esc(f.remedy)}</p>${rootCause}<p class="muted">Columns: ${esc(f.columns.join(', ') || '—')}</p>${shownOn}${evidence}` +
    `<h4>Evidence samples (${f.samples.length})</h4>${samples.length ? samples.join('') : '<p class="muted">None: this finding reads the step series only, or the run has no samples at those steps.</p>'}` +
    `</details>`
  );
}

function findingsSection(r: RunReport): string {
  const d = r.diagnosis;
  const skipped = d.skipped.length
    ? `<details class="skipped"><summary>${d.skipped.length} detector(s) had no usable input</summary>${table(
        ['detector', 'signatures', 'why'],
        d.skipped.map((s) => [esc(s.detector), esc(s.codes.join(', ')), esc(s.reason)]),
      )}</details>`
    : '';
  const body = d.findings.length
    ? d.findings.map((f, i) => findingBlock(f, i, r)).join('')
    : `<p class="healthy">No problems found in ${esc(d.points.toLocaleString('en-US'))} logged points (${d.ran.length} detectors ran).</p>`;
  return `<section id="findings"><h2>Findings</h2><p class="muted">Most severe first. A marker on the charts sits at each onset; click it for the evidence.</p>${body}${skipped}</section>`;
}

function chartFigure(c: ReportChart, index: number, r: RunReport): string {
  // exact figures are the run's own; a diff chart's A and B lines share a column name
  const last = (c.x === 'diff' ? [] : c.series)
    .map((s) => {
      const sum = r.summaries[s.column];
      const nonFinite = sum && sum.non_finite ? ` <span class="bad">${sum.non_finite} non-finite</span>` : '';
      return sum ? `<span>${esc(s.label)} <b>${esc(num(sum.last))}</b> <span class="muted">[${esc(num(sum.min))}, ${esc(num(sum.max))}]</span>${nonFinite}</span>` : '';
    })
    .join('');
  return (
    `<figure class="chart-card" id="chart-${esc(c.id)}"><figcaption>${esc(c.title)}</figcaption>` +
    `<div class="chart" data-chart="${index}"></div><div class="chart-facts">${last}</div></figure>`
  );
}

function chartsSection(r: RunReport): string {
  const ds = r.downsampling;
  const note = ds.reduced
    ? `${ds.rows.toLocaleString('en-US')} steps drawn as ${ds.points.toLocaleString('en-US')} points: each of ${ds.buckets} buckets (about ${Math.ceil(ds.rows / ds.buckets).toLocaleString('en-US')} steps) keeps its minimum and maximum, drawn at the bucket's first and last step, so spikes stay visible. Figures under each chart are exact (last value, [min, max]).`
    : `All ${ds.rows.toLocaleString('en-US')} steps drawn. Figures under each chart: last value, [min, max].`;
  const body = r.charts.length ? `<div class="charts">${r.charts.map((c, i) => chartFigure(c, i, r)).join('')}</div>` : '<p class="muted">No step metrics logged yet.</p>';
  return `<section id="charts"><h2>Charts</h2><p class="muted">${esc(note)} Drag to zoom, double-click to reset.</p>${body}</section>`;
}

/** The span tree a sample was logged in, when the run recorded it. */
function treeOf(r: RunReport, s: StoredSampleRecord): SpanTreeNode | undefined {
  const root = s.span_id === undefined ? undefined : r.spans.rootOf[s.span_id];
  return root === undefined ? undefined : r.spans.trees[root];
}

function forensicsSection(r: RunReport): string {
  if (r.forensics.length === 0) {
    return `<section id="forensics"><h2>Samples</h2><p class="muted">${r.run.samples ? 'No steps chosen.' : 'This run has no per-sample records.'}</p></section>`;
  }
  const steps = r.forensics.map((s) => {
    const stored = Object.entries(s.stored).map(([k, n]) => `${k} ${n}`).join(', ') || 'none stored at this step';
    const cards = s.samples.map((x) => sampleCard(x, undefined, treeOf(r, x), trialOfSample(r.trials, x.step, x.sample_id, x.rank ?? 0))).join('');
    const trials = r.trials.at[String(s.step)] ?? [];
    const trialList = trials.length ? `<details class="trials"><summary>${esc(trials.length)} trial${trials.length === 1 ? '' : 's'} captured at this step</summary>${trials.map(trialLine).join('')}</details>` : '';
    return `<div class="forensic-step" id="samples-step-${esc(s.step)}"><h3>Step ${esc(s.step)}</h3><p class="muted">${esc(s.why.join('; '))} · stored: ${esc(stored)}</p>${trialList}${cards}</div>`;
  });
  return `<section id="forensics"><h2>Samples</h2><p class="muted">Top, bottom and random samples at chosen steps (probe report --steps to choose others; probe samples for all).</p>${steps.join('')}</section>`;
}

/** Unix seconds as ISO time; a timestamp out of range (say, nanoseconds) as written. */
function isoTime(seconds: number): string {
  const d = new Date(seconds * 1000);
  return Number.isFinite(d.getTime()) ? d.toISOString() : String(seconds);
}

/** Event kinds and their timeline class. */
function eventClass(kind: string): string {
  if (/crash|signal|error|auto_halt/.test(kind)) return 'ev-bad';
  if (/drops|bad_record/.test(kind)) return 'ev-warn';
  if (/finding/.test(kind)) return 'ev-finding';
  if (/checkpoint|eval/.test(kind)) return 'ev-checkpoint';
  return 'ev-other';
}

function eventsSection(r: RunReport): string {
  const { total, by_kind, listed } = r.events;
  if (total === 0) return `<section id="events"><h2>Events</h2><p class="muted">No events.</p></section>`;
  const lo = r.run.first_step ?? 0;
  const hi = r.run.last_step ?? lo;
  const span = hi > lo ? hi - lo : 1;
  const marks = listed
    .map((e, i) => {
      if (e.at_step === null) return '';
      const left = Math.min(100, Math.max(0, ((e.at_step - lo) / span) * 100));
      return `<a class="ev ${eventClass(e.kind)}" style="left:${left.toFixed(3)}%" href="#event-${i}" title="${esc(`${e.kind} at step ${e.at_step}${e.message ? `: ${e.message}` : ''}`)}"></a>`;
    })
    .join('');
  const kinds = Object.entries(by_kind).map(([k, n]) => `<span class="chip ${eventClass(k)}"><b>${esc(k)}</b> ${n}</span>`).join('');
  const rows = listed.map((e, i) => [
    `<span id="event-${i}">${esc(isoTime(e.timestamp))}</span>`,
    e.step !== null ? esc(e.step) : e.at_step !== null ? `<span class="muted">≈ ${esc(e.at_step)}</span>` : '—',
    `<span class="${eventClass(e.kind)}">${esc(e.kind)}</span>`,
    esc(e.rank),
    esc(e.message),
    Object.keys(e.data).length ? `<code>${esc(JSON.stringify(e.data).slice(0, 300))}</code>` : '',
  ]);
  const more = total > listed.length ? `<p class="muted">${total - listed.length} more not listed (probe events ${esc(r.run.dir)}).</p>` : '';
  return (
    `<section id="events"><h2>Events</h2><div class="chips">${kinds}</div>` +
    `<div class="timeline" title="steps ${lo}–${hi}">${marks}<span class="tl-lo">${esc(lo)}</span><span class="tl-hi">${esc(hi)}</span></div>` +
    `${table(['time', 'step', 'kind', 'rank', 'message', 'data'], rows, 'events')}${more}</section>`
  );
}

function changesTable(title: string, changes: ObjectChange[]): string {
  if (changes.length === 0) return `<p><b>${esc(title)}</b>: same</p>`;
  const show = (v: unknown) => esc(typeof v === 'number' ? num(v) : (JSON.stringify(v) ?? String(v)));
  return `<h4>${esc(title)} (${changes.length})</h4>${table(
    ['', 'key', 'A', 'B'],
    changes.map((c) => [c.kind === 'added' ? '+' : c.kind === 'removed' ? '−' : '~', esc(c.path), c.kind === 'added' ? '' : show(c.a), c.kind === 'removed' ? '' : show(c.b)]),
    'changes',
  )}`;
}

function diffSection(r: RunReport, chartOffset: number): string {
  if (!r.diff) return '';
  const d = r.diff.result;
  const lead = d.lead ? `<p class="lead">Lead indicator: <b>${esc(d.lead.metric)}</b> diverges first, at step ${esc(d.lead.step)}.</p>` : '<p>No metric diverged (3 σ for 3 points in a row).</p>';
  const metrics = table(
    ['metric', 'final A', 'final B', 'best A', 'best B', 'AUC A', 'AUC B', 'diverges at'],
    d.metrics.map((m, k) => [
      `<span id="diff-metric-${k}">${esc(m.metric)}</span>`,
      esc(num(m.final.a)), esc(num(m.final.b)),
      esc(num(m.best?.a)), esc(num(m.best?.b)),
      esc(num(m.auc.a)), esc(num(m.auc.b)),
      m.divergence ? `step ${esc(m.divergence.step)} (${esc(num(m.divergence.difference))}, σ ${esc(num(m.divergence.sigma))})` : '—',
    ]),
    'metrics',
  );
  const onlyIn = (label: string, fs: Finding[]) =>
    fs.length ? `<p><b>Findings only in ${label}:</b> ${fs.map((f) => `<span class="chip sev-${f.severity}">${esc(f.code)} from ${esc(f.onset_step)}</span>`).join(' ')}</p>` : '';
  const charts = r.diff.charts.map((c, i) => chartFigure(c, chartOffset + i, r)).join('');
  return (
    `<section id="diff"><h2>Compared with B</h2><p>A <code>${esc(d.a)}</code> · B <code>${esc(d.b)}</code></p>` +
    d.warnings.map((w) => `<p class="warn">${esc(w)}</p>`).join('') +
    `<p>Steps: A ${esc(d.steps.a)}, B ${esc(d.steps.b)}, ${esc(d.steps.common)} in common.</p>${lead}` +
    (charts ? `<div class="charts">${charts}</div>` : '') +
    onlyIn('A', d.findings.only_in_a) + onlyIn('B', d.findings.only_in_b) +
    changesTable('Run', d.run) + changesTable('Trainer config', d.trainer_config) + changesTable('Environment', d.environment) +
    `<h4>Metrics in both (${d.metrics.length})</h4>${metrics}` +
    (d.only_in_a.length ? `<p class="muted">Only in A: ${esc(d.only_in_a.join(', '))}</p>` : '') +
    (d.only_in_b.length ? `<p class="muted">Only in B: ${esc(d.only_in_b.join(', '))}</p>` : '') +
    `</section>`
  );
}

function runSection(r: RunReport): string {
  const { trainer_config, environment, extra, ...facts } = r.run.manifest;
  return (
    `<section id="run"><h2>Run</h2><h3>Manifest</h3>${jsonBlock(facts, 'empty')}` +
    (r.spans.counts.length
      ? `<h3>Spans</h3>${table(['kind', 'spans', 'open', 'error'], r.spans.counts.map((c) => [esc(c.kind), esc(num(c.spans)), esc(num(c.open)), esc(num(c.error))]))}`
      : '') +
    (r.trials.total ? `<h3>Captured trials</h3><p>${esc(r.trials.total)} captured (probe trial list ${esc(r.run.dir)}).</p>` : '') +
    `<h3>Trainer config</h3>${jsonBlock(trainer_config, 'No trainer config recorded.')}` +
    `<h3>Environment</h3>${jsonBlock(environment, 'No environment recorded.')}` +
    `<h3>Extra</h3>${jsonBlock(extra, 'Nothing else recorded.')}</section>`
  );
}

/** The client's share of the report: what it needs to draw the charts and their marks. */
function clientData(r: RunReport): unknown {
  const charts = [...r.charts, ...(r.diff?.charts ?? [])];
  return {
    x: r.x,
    charts: charts.map((c) => ({ id: c.id, x: c.x, axes: c.axes, series: c.series.map((s) => ({ label: s.label, axis: s.axis })), values: c.values, marks: c.marks })),
  };
}

/** The report as one HTML document. */
export function renderHtml(r: RunReport): string {
  const a = loadAssets();
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<link rel="icon" href="data:,"><title>${esc(r.run.manifest.run_id)} · rlprobe report</title>` +
    `<style>${a.uplotCss}</style><style>${a.clientCss}</style></head><body>` +
    header(r) + damagedBlock(r) + nav(r) + findingsSection(r) + chartsSection(r) + forensicsSection(r) + eventsSection(r) + diffSection(r, r.charts.length) + runSection(r) +
    `<script type="application/json" id="report-data">${scriptJson(clientData(r))}</script>` +
    `<script>${a.uplotJs}</script><script>${a.clientJs}</script></body></html>\n`
  );
}
