/**
 * The report of several runs as one self-contained HTML page: the runs side by side (a
 * swatch in each run's colour), each run's findings under its name, one chart per metric
 * with a line per run, then each run's samples, events and settings, and the settings that
 * differ between them. Built from the one-run page's parts (html.ts).
 */
import type { ReportChart } from './build-report.js';
import { BAND_NOTE, chartFigure, clientChart, damagedBlock, eventsBody, findingsBody, forensicsBody, page, runBody, summaryFact } from './html.js';
import type { HtmlOptions, RunPart } from './html.js';
import { esc, table } from './html-parts.js';
import type { ReportedRun, RunsReport } from './runs-report.js';

function swatch(run: ReportedRun): string {
  return `<span class="swatch" style="background:${esc(run.color)}"></span>`;
}

function findingCount(n: number): string {
  return n === 0 ? 'no findings' : `${n} finding${n === 1 ? '' : 's'}`;
}

function header(rr: RunsReport): string {
  const rows = rr.runs.map((run) => {
    const r = run.report;
    const m = r.run.manifest;
    return [
      `<a href="#${esc(run.prefix)}run">${swatch(run)}<b>${esc(run.label)}</b></a>`,
      `<code>${esc(r.run.dir)}</code>`,
      esc(m.algorithm),
      esc(m.model_name ?? '—'),
      r.run.rows ? `${esc(r.run.rows.toLocaleString('en-US'))} (${esc(r.run.first_step)}–${esc(r.run.last_step)})` : 'none yet',
      esc(r.run.samples.toLocaleString('en-US')),
      `<span class="status status-${esc(r.run.status.state)}">${esc(r.run.status.summary)}</span>`,
      `<a href="#${esc(run.prefix)}findings">${esc(findingCount(r.diagnosis.findings.length))}</a>`,
    ];
  });
  return (
    `<header><h1>${esc(rr.runs.length)} runs: ${rr.runs.map((r) => esc(r.label)).join(', ')}</h1>` +
    table(['run', 'directory', 'algorithm', 'model', 'steps', 'samples', 'status', 'findings'], rows, 'runs') +
    `<div class="muted">report by rlprobe ${esc(rr.rlprobe_version)} at ${esc(rr.generated_at)}</div></header>`
  );
}

function nav(rr: RunsReport): string {
  const findings = rr.runs.reduce((n, r) => n + r.report.diagnosis.findings.length, 0);
  const events = rr.runs.reduce((n, r) => n + r.report.events.total, 0);
  const links: Array<[string, string]> = [
    ['findings', `Findings (${findings})`],
    ['charts', `Charts (${rr.charts.length})`],
    ['forensics', 'Samples'],
    ['events', `Events (${events})`],
  ];
  if (rr.differences.length) links.push(['differences', `Differences (${rr.differences.length})`]);
  links.push(['runs', 'Runs']);
  return `<nav>${links.map(([id, label]) => `<a href="#${id}">${esc(label)}</a>`).join('')}</nav>`;
}

/** A run's heading inside a section: its swatch and name, with `what` after it. */
function runHeading(run: ReportedRun, what: string, id?: string): string {
  return `<h3 class="run-findings"${id ? ` id="${esc(id)}"` : ''}>${swatch(run)}${esc(run.label)}${what ? `: ${esc(what)}` : ''}</h3>`;
}

/** Under an overlay chart: each run's exact figures (and its spread's), in its colour. */
function overlayFacts(c: ReportChart, rr: RunsReport): string {
  const lines = c.series.map((s) => summaryFact(s.label, rr.runs[s.run!].report.summaries[s.column]));
  const bands = c.bands.map((b) => summaryFact(`${rr.runs[b.run!].label} ${b.column}`, rr.runs[b.run!].report.summaries[b.column]));
  return [...lines, ...bands].join('');
}

function chartsSection(rr: RunsReport): string {
  const ds = rr.downsampling;
  const note =
    `${rr.runs.length} runs on one step axis, a line per run. Each run is downsampled as a one-run report is (${ds.buckets} buckets, each keeping its minimum and maximum, so spikes stay visible)` +
    (ds.gridded
      ? `, then the runs' points are merged into ${ds.buckets} buckets over their steps (${ds.points.toLocaleString('en-US')} points), each run keeping its minimum and maximum per bucket.`
      : `; every step they hold is drawn (${ds.points.toLocaleString('en-US')} points).`) +
    ' Figures under each chart are exact (last value, [min, max]).';
  const body = rr.charts.length ? `<div class="charts">${rr.charts.map((c, i) => chartFigure(c, i, overlayFacts(c, rr))).join('')}</div>` : '<p class="muted">No step metrics logged yet.</p>';
  return `<section id="charts"><h2>Charts</h2><p class="muted">${esc(note)} ${BAND_NOTE} Drag to zoom, double-click to reset.</p>${body}</section>`;
}

function show(v: unknown): string {
  return v === undefined ? '<span class="muted">not set</span>' : `<code>${esc(JSON.stringify(v))}</code>`;
}

function differencesSection(rr: RunsReport): string {
  if (rr.differences.length === 0) return '';
  return (
    `<section id="differences"><h2>Differences</h2><p class="muted">Settings (algorithm, model, world size, trainer config) whose values differ between the runs.</p>` +
    table(['setting', ...rr.runs.map((r) => r.label)], rr.differences.map((d) => [`<code>${esc(d.key)}</code>`, ...d.values.map(show)]), 'changes') +
    `</section>`
  );
}

/** The report of several runs as one HTML document. */
export function renderRunsHtml(rr: RunsReport, options: HtmlOptions = {}): string {
  const links = options.linkBase === undefined ? process.cwd() : options.linkBase;
  const parts: Array<RunPart & { run: ReportedRun }> = rr.runs.map((run) => ({ run, r: run.report, prefix: run.prefix, charts: rr.charts, links }));
  const damaged = parts.map((p) => damagedBlock(p.r, `${p.run.label}: `)).join('');
  const findings = parts.map((p) => runHeading(p.run, findingCount(p.r.diagnosis.findings.length), `${p.prefix}findings`) + findingsBody(p)).join('');
  const samples = parts.map((p) => runHeading(p.run, '') + forensicsBody(p, 4)).join('');
  const events = parts.map((p) => runHeading(p.run, `${p.r.events.total} event${p.r.events.total === 1 ? '' : 's'}`) + eventsBody(p)).join('');
  const runs = parts
    .map((p) => `<details class="run" id="${esc(p.prefix)}run"><summary>${swatch(p.run)}<b>${esc(p.run.label)}</b> <code>${esc(p.r.run.dir)}</code></summary>${runBody(p.r, 4)}</details>`)
    .join('');
  const body =
    header(rr) + damaged + nav(rr) +
    `<section id="findings"><h2>Findings</h2><p class="muted">Per run, most severe first. A marker on the charts, named by its run, sits at each onset; click it for the evidence.</p>${findings}</section>` +
    chartsSection(rr) +
    `<section id="forensics"><h2>Samples</h2><p class="muted">Per run: the findings' onsets first, then the first and last sampled steps.</p>${samples}</section>` +
    `<section id="events"><h2>Events</h2>${events}</section>` +
    differencesSection(rr) +
    `<section id="runs"><h2>Runs</h2>${runs}</section>`;
  return page(`${rr.runs.length} runs`, body, { x: rr.x, charts: rr.charts.map(clientChart) });
}
