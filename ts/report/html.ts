/**
 * The report as one self-contained HTML file: uPlot, its stylesheet, the report's own
 * script and the chart data are inlined, so the file opens from disk or an artifact store
 * with no network. Everything but the charts is rendered here, so findings, samples and
 * the manifest read even with scripts blocked.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import type { Finding } from '../doctor/finding.js';
import { formatConfidence } from '../doctor/format.js';
import type { ObjectChange } from '../diff/object-diff.js';
import type { ReportChart, RunFacts, RunReport, SeriesSummary } from './build-report.js';
import type { LinkBase } from './file-links.js';
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

export interface HtmlOptions {
  /**
   * The directory the page is written to: links to the run's files (captured trials) are
   * relative to it, so the report and the runs can be shared or moved together. Default: the
   * current directory; null: absolute `file://` URLs.
   */
  linkBase?: LinkBase;
}

/**
 * Where a run's part of a page lives: ids are prefixed (several runs share one page, each
 * with a `finding-0`), the run's figures and charts, and the base of its file links.
 */
export interface RunPart {
  r: RunFacts;
  /** '' for a one-run page, `run2-` on a page of several. */
  prefix: string;
  /** The charts the run's findings are marked on. */
  charts: ReportChart[];
  links: LinkBase;
}

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
export function damagedBlock(r: RunFacts, who = ''): string {
  const items = [
    ...r.damaged.map((d) => `<li>${esc(who)}<b>${esc(d.surface)}</b> could not be read (shown without them): ${esc(d.error)}</li>`),
    ...r.foreign_files.map((f) => `<li>${esc(who)}<b>skipped</b> <code>${esc(f.path)}</code> (${esc(f.surface)}): ${esc(f.reason)}</li>`),
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

function findingBlock(f: Finding, i: number, part: RunPart): string {
  const { r, prefix } = part;
  const evidence = table(
    ['evidence', 'value'],
    Object.entries(f.evidence).map(([k, v]) => [esc(k), esc(num(v))]),
    'evidence',
  );
  // the evidence is why the finding is believed: shown without another click
  const samples = f.samples.map((s) => {
    const rec = r.evidence[sampleKey(s.step, s.sample_id)];
    return rec
      ? sampleCard(rec, { why: s.why, tree: treeOf(r, rec), trial: trialOfSample(r.trials, rec.step, rec.sample_id, rec.rank ?? 0), links: part.links, open: true })
      : `<div class="sample missing"><div class="why">${esc(s.why)}</div>step ${esc(s.step)}, sample ${esc(s.sample_id)}: not found in the samples</div>`;
  });
  const cause = f.root_cause ? r.diagnosis.findings.findIndex((x) => x.code === f.root_cause) : -1;
  const rootCause = f.root_cause ? `<p>A consequence of ${cause >= 0 ? `<a href="#${prefix}finding-${cause}">${esc(f.root_cause)}</a>` : esc(f.root_cause)}.</p>` : '';
  const charts = part.charts.filter((c) => c.marks.some((m) => m.target === `${prefix}finding-${i}`));
  const shownOn = charts.length ? `<p class="muted">Marked on: ${charts.map((c) => `<a href="#chart-${esc(c.id)}">${esc(c.title)}</a>`).join(', ')}</p>` : '';
  return (
    `<details class="finding sev-${f.severity}" id="${prefix}finding-${i}"><summary><span class="sev">${esc(f.severity)}</span> <b>${esc(f.code)}</b> ` +
    `from step ${esc(f.onset_step)} to ${esc(f.last_step)} · confidence ${esc(formatConfidence(f.confidence))}<div class="message">${esc(f.message)}</div></summary>` +
    `<p class="remedy"><b>Remedy:</b> ${esc(f.remedy)}</p>${rootCause}<p class="muted">Columns: ${esc(f.columns.join(', ') || '—')}</p>${shownOn}${evidence}` +
    `<h4>Evidence samples (${f.samples.length})</h4>${samples.length ? samples.join('') : '<p class="muted">None: this finding reads the step series only, or the run has no samples at those steps.</p>'}` +
    `</details>`
  );
}

/** A run's findings (each a disclosure with its evidence samples), or that there are none. */
export function findingsBody(part: RunPart): string {
  const d = part.r.diagnosis;
  const skipped = d.skipped.length
    ? `<details class="skipped"><summary>${d.skipped.length} detector(s) had no usable input</summary>${table(
        ['detector', 'signatures', 'why'],
        d.skipped.map((s) => [esc(s.detector), esc(s.codes.join(', ')), esc(s.reason)]),
      )}</details>`
    : '';
  const body = d.findings.length
    ? d.findings.map((f, i) => findingBlock(f, i, part)).join('')
    : `<p class="healthy">No problems found in ${esc(d.points.toLocaleString('en-US'))} logged points (${d.ran.length} detectors ran).</p>`;
  return body + skipped;
}

function findingsSection(part: RunPart): string {
  return `<section id="findings"><h2>Findings</h2><p class="muted">Most severe first. A marker on the charts sits at each onset; click it for the evidence.</p>${findingsBody(part)}</section>`;
}

/** One figure line under a chart: last value, [min, max], non-finite count. */
export function summaryFact(label: string, sum: SeriesSummary | undefined): string {
  if (!sum) return '';
  const nonFinite = sum.non_finite ? ` <span class="bad">${sum.non_finite} non-finite</span>` : '';
  return `<span>${esc(label)} <b>${esc(num(sum.last))}</b> <span class="muted">[${esc(num(sum.min))}, ${esc(num(sum.max))}]</span>${nonFinite}</span>`;
}

/** A chart's card: its title, the element the script draws in, and the exact figures (HTML) under it. */
export function chartFigure(c: ReportChart, index: number, facts: string): string {
  return (
    `<figure class="chart-card" id="chart-${esc(c.id)}"><figcaption>${esc(c.title)}</figcaption>` +
    `<div class="chart" data-chart="${index}"></div><div class="chart-facts">${facts}</div></figure>`
  );
}

/** A run chart's exact figures: each line's and each band's spread (a diff chart's A and B share a column: none). */
function runFacts(c: ReportChart, r: RunReport): string {
  if (c.x === 'diff') return '';
  return [...c.series.map((s) => summaryFact(s.label, r.summaries[s.column])), ...c.bands.map((b) => summaryFact(b.column, r.summaries[b.column]))].join('');
}

function chartsSection(r: RunReport): string {
  const ds = r.downsampling;
  const note = ds.reduced
    ? `${ds.rows.toLocaleString('en-US')} steps drawn as ${ds.points.toLocaleString('en-US')} points: each of ${ds.buckets} buckets (about ${Math.ceil(ds.rows / ds.buckets).toLocaleString('en-US')} steps) keeps its minimum and maximum, drawn at the bucket's first and last step, so spikes stay visible. Figures under each chart are exact (last value, [min, max]).`
    : `All ${ds.rows.toLocaleString('en-US')} steps drawn. Figures under each chart: last value, [min, max].`;
  const body = r.charts.length ? `<div class="charts">${r.charts.map((c, i) => chartFigure(c, i, runFacts(c, r))).join('')}</div>` : '<p class="muted">No step metrics logged yet.</p>';
  return `<section id="charts"><h2>Charts</h2><p class="muted">${esc(note)} ${BAND_NOTE} Drag to zoom, double-click to reset.</p>${body}</section>`;
}

/** How to read a band (said once above the charts). */
export const BAND_NOTE = 'A shaded band is a mean ± its spread (reward_mean ± reward_std), on the mean\'s axis.';

/** The span tree a sample was logged in, when the run recorded it. */
function treeOf(r: RunFacts, s: StoredSampleRecord): SpanTreeNode | undefined {
  const root = s.span_id === undefined ? undefined : r.spans.rootOf[s.span_id];
  return root === undefined ? undefined : r.spans.trees[root];
}

/** A run's samples at its chosen steps (the first card of each step open), or why there are none. */
export function forensicsBody(part: RunPart, level = 3): string {
  const { r, prefix } = part;
  if (r.forensics.length === 0) return `<p class="muted">${r.run.samples ? 'No steps chosen.' : 'This run has no per-sample records.'}</p>`;
  return r.forensics
    .map((s) => {
      const stored = Object.entries(s.stored).map(([k, n]) => `${k} ${n}`).join(', ') || 'none stored at this step';
      // one card open per step: its text is on the page, the others a click away
      const cards = s.samples
        .map((x, k) => sampleCard(x, { tree: treeOf(r, x), trial: trialOfSample(r.trials, x.step, x.sample_id, x.rank ?? 0), links: part.links, open: k === 0 }))
        .join('');
      const trials = r.trials.at[String(s.step)] ?? [];
      const trialList = trials.length
        ? `<details class="trials"><summary>${esc(trials.length)} trial${trials.length === 1 ? '' : 's'} captured at this step</summary>${trials.map((t) => trialLine(t, part.links)).join('')}</details>`
        : '';
      return `<div class="forensic-step" id="${prefix}samples-step-${esc(s.step)}"><h${level}>Step ${esc(s.step)}</h${level}><p class="muted">${esc(s.why.join('; '))} · stored: ${esc(stored)}</p>${trialList}${cards}</div>`;
    })
    .join('');
}

function forensicsSection(part: RunPart): string {
  const intro = part.r.forensics.length
    ? '<p class="muted">The findings\' onsets first, then the first and last sampled steps: top, bottom and random samples (probe report --steps to choose others; probe samples for all).</p>'
    : '';
  return `<section id="forensics"><h2>Samples</h2>${intro}${forensicsBody(part)}</section>`;
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

/** A run's events: counts by kind, a timeline on the step axis, the listed events. */
export function eventsBody(part: RunPart): string {
  const { r, prefix } = part;
  const { total, by_kind, listed } = r.events;
  if (total === 0) return '<p class="muted">No events.</p>';
  const lo = r.run.first_step ?? 0;
  const hi = r.run.last_step ?? lo;
  const span = hi > lo ? hi - lo : 1;
  const marks = listed
    .map((e, i) => {
      if (e.at_step === null) return '';
      const left = Math.min(100, Math.max(0, ((e.at_step - lo) / span) * 100));
      return `<a class="ev ${eventClass(e.kind)}" style="left:${left.toFixed(3)}%" href="#${prefix}event-${i}" title="${esc(`${e.kind} at step ${e.at_step}${e.message ? `: ${e.message}` : ''}`)}"></a>`;
    })
    .join('');
  const kinds = Object.entries(by_kind).map(([k, n]) => `<span class="chip ${eventClass(k)}"><b>${esc(k)}</b> ${n}</span>`).join('');
  const rows = listed.map((e, i) => [
    `<span id="${prefix}event-${i}">${esc(isoTime(e.timestamp))}</span>`,
    e.step !== null ? esc(e.step) : e.at_step !== null ? `<span class="muted">≈ ${esc(e.at_step)}</span>` : '—',
    `<span class="${eventClass(e.kind)}">${esc(e.kind)}</span>`,
    esc(e.rank),
    esc(e.message),
    Object.keys(e.data).length ? `<code>${esc(JSON.stringify(e.data).slice(0, 300))}</code>` : '',
  ]);
  const more = total > listed.length ? `<p class="muted">${total - listed.length} more not listed (probe events ${esc(r.run.dir)}).</p>` : '';
  return (
    `<div class="chips">${kinds}</div>` +
    `<div class="timeline" title="steps ${lo}–${hi}">${marks}<span class="tl-lo">${esc(lo)}</span><span class="tl-hi">${esc(hi)}</span></div>` +
    `${table(['time', 'step', 'kind', 'rank', 'message', 'data'], rows, 'events')}${more}`
  );
}

function eventsSection(part: RunPart): string {
  return `<section id="events"><h2>Events</h2>${eventsBody(part)}</section>`;
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
  const charts = r.diff.charts.map((c, i) => chartFigure(c, chartOffset + i, '')).join('');
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

/** A run's manifest, spans, trials, trainer config, environment and extra (headings at `level`). */
export function runBody(r: RunFacts, level = 3): string {
  const { trainer_config, environment, extra, ...facts } = r.run.manifest;
  const h = (title: string) => `<h${level}>${esc(title)}</h${level}>`;
  return (
    `${h('Manifest')}${jsonBlock(facts, 'empty')}` +
    (r.spans.counts.length
      ? `${h('Spans')}${table(['kind', 'spans', 'open', 'error'], r.spans.counts.map((c) => [esc(c.kind), esc(num(c.spans)), esc(num(c.open)), esc(num(c.error))]))}`
      : '') +
    (r.trials.total ? `${h('Captured trials')}<p>${esc(r.trials.total)} captured (probe trial list ${esc(r.run.dir)}).</p>` : '') +
    `${h('Trainer config')}${jsonBlock(trainer_config, 'No trainer config recorded.')}` +
    `${h('Environment')}${jsonBlock(environment, 'No environment recorded.')}` +
    `${h('Extra')}${jsonBlock(extra, 'Nothing else recorded.')}`
  );
}

/** The client's share of a chart: what it needs to draw the lines, bands and marks. */
export function clientChart(c: ReportChart): unknown {
  return {
    id: c.id,
    x: c.x,
    axes: c.axes,
    series: c.series.map((s) => ({ label: s.label, axis: s.axis, color: s.color })),
    values: c.values,
    bands: c.bands.map((b) => ({ of: b.of, label: b.label, color: b.color, values: b.values, lo: b.lo, hi: b.hi })),
    marks: c.marks,
  };
}

/** The page around `body`: inlined styles, the chart data, uPlot and the report's script. */
export function page(title: string, body: string, data: unknown): string {
  const a = loadAssets();
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<link rel="icon" href="data:,"><title>${esc(title)} · rlprobe report</title>` +
    `<style>${a.uplotCss}</style><style>${a.clientCss}</style></head><body>` +
    body +
    `<script type="application/json" id="report-data">${scriptJson(data)}</script>` +
    `<script>${a.uplotJs}</script><script>${a.clientJs}</script></body></html>\n`
  );
}

/** The report as one HTML document. */
export function renderHtml(r: RunReport, options: HtmlOptions = {}): string {
  const part: RunPart = { r, prefix: '', charts: r.charts, links: options.linkBase === undefined ? process.cwd() : options.linkBase };
  const body =
    header(r) + damagedBlock(r) + nav(r) + findingsSection(part) + chartsSection(r) + forensicsSection(part) + eventsSection(part) + diffSection(r, r.charts.length) +
    `<section id="run"><h2>Run</h2>${runBody(r)}</section>`;
  return page(r.run.manifest.run_id, body, { x: r.x, charts: [...r.charts, ...(r.diff?.charts ?? [])].map(clientChart) });
}
