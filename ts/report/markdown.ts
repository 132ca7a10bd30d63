/**
 * `probe report --format md`: the report for a terminal or a pull-request comment — the
 * findings, the headline series as numbers and sparklines, events, the diff's verdict, and
 * a link to the HTML report.
 */
import { formatConfidence } from '../doctor/format.js';
import type { RunReport } from './build-report.js';
import { fileHref } from './file-links.js';
import type { LinkBase } from './file-links.js';
import { num } from './html-parts.js';

const BARS = '▁▂▃▄▅▆▇█';

/**
 * A range this small next to the values' magnitude is float rounding (the means of 0.1 over
 * 3 and over 4 values differ in the last bit), not a change: stretched to the full height
 * it would draw a constant series as noise. The charts keep 6 significant digits.
 */
const FLAT_RELATIVE = 1e-9;

/** A sparkline of `values` (nulls skipped) in `width` cells, each the mean of its share. */
export function sparkline(values: Array<number | null>, width = 24): string {
  const finite = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (finite.length === 0) return '';
  const cells: number[] = [];
  const n = Math.min(width, finite.length);
  for (let c = 0; c < n; c++) {
    const part = finite.slice(Math.floor((c * finite.length) / n), Math.floor(((c + 1) * finite.length) / n));
    cells.push(part.reduce((a, b) => a + b, 0) / part.length);
  }
  const lo = Math.min(...cells);
  const hi = Math.max(...cells);
  const flat = hi - lo <= FLAT_RELATIVE * Math.max(Math.abs(lo), Math.abs(hi));
  return cells.map((v) => BARS[flat ? 0 : Math.round(((v - lo) / (hi - lo)) * (BARS.length - 1))]).join('');
}

/** A table cell: pipes and newlines would break the row. */
export function cell(s: unknown): string {
  return String(s).replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

/** Series a reader scans first, in this order; reward components follow. */
export const HEADLINE = [
  'reward_mean', 'reward_std', 'kl_mean', 'entropy_mean', 'clip_fraction', 'adv_zero_frac', 'zero_variance_group_frac',
  'value_explained_variance', 'completion_len_mean', 'max_len_hit_frac', 'truncation_rate', 'loss', 'grad_norm', 'lr',
  'nan_count', 'step_time_s',
];

export interface MarkdownOptions {
  /** Where the HTML report is (a path relative to the Markdown, or a URL). */
  htmlLink?: string;
  /**
   * The directory the Markdown is read from: links to the run's files (captured trials) are
   * relative to it. Default: the current directory; null: absolute `file://` URLs.
   */
  linkBase?: LinkBase;
}

/** A finding's row in a findings table (see findingsHeader). */
export function findingRow(f: RunReport['diagnosis']['findings'][number]): string {
  return `| ${f.severity} | **${f.code}** | ${f.onset_step}–${f.last_step} | ${formatConfidence(f.confidence)} | ${cell(f.message)} |`;
}

/** Events worth a line of their own: how a run ended badly or was stopped. */
export const NOTABLE_EVENT = /crash|signal|auto_halt|error/;

export const FINDINGS_HEADER = ['| severity | signature | steps | confidence | what |', '|---|---|---|---|---|'];

/** Every charted series by column, the spreads drawn as bands included (their own values). */
export function seriesValues(r: RunReport): Map<string, Array<number | null>> {
  const values = new Map<string, Array<number | null>>();
  for (const c of r.charts) {
    c.series.forEach((s, k) => values.set(s.column, c.values[k]));
    for (const b of c.bands) values.set(b.column, b.values);
  }
  return values;
}

/** The columns of the key-series table: the headline ones, then the reward components. */
export function keyColumns(columns: Iterable<string>): string[] {
  const all = [...columns];
  const present = new Set(all);
  return [...HEADLINE.filter((c) => present.has(c)), ...all.filter((c) => c.startsWith('reward_component.'))];
}

/** A diagnosis as Markdown: its findings table and remedies (or that none were found), then the detectors that had no input. */
export function findingsLines(d: RunReport['diagnosis']): string[] {
  const out: string[] = [];
  if (d.findings.length === 0) {
    out.push(`No problems found in ${d.points.toLocaleString('en-US')} logged points (${d.ran.length} detectors ran).`);
  } else {
    out.push(...FINDINGS_HEADER);
    for (const f of d.findings) out.push(findingRow(f));
    out.push('');
    for (const f of d.findings) out.push(`- **${f.code}**: ${cell(f.remedy)}${f.root_cause ? ` (a consequence of ${f.root_cause})` : ''}`);
  }
  if (d.skipped.length) out.push('', `${d.skipped.length} detector(s) had no usable input: ${d.skipped.map((s) => s.detector).join(', ')}.`);
  out.push('');
  return out;
}

export function renderMarkdown(r: RunReport, options: MarkdownOptions = {}): string {
  const m = r.run.manifest;
  const out: string[] = [];
  out.push(`# rlprobe report: ${m.run_id}`, '');
  out.push(
    `\`${m.algorithm}\`${m.model_name ? ` · ${m.model_name}` : ''} · ${r.run.rows.toLocaleString('en-US')} steps` +
      `${r.run.rows ? ` (${r.run.first_step}–${r.run.last_step})` : ''} · ${r.run.samples.toLocaleString('en-US')} samples · ${r.run.status.summary}`,
  );
  out.push('', options.htmlLink ? `Charts, samples and evidence: [HTML report](${options.htmlLink})` : `Charts, samples and evidence: \`probe report ${r.run.dir} --out report.html\``, '');
  for (const d of r.damaged) out.push(`> **Damaged: ${d.surface}** could not be read (shown without it): ${cell(d.error)}`, '');
  if (r.foreign_files.length) out.push(`> ${r.foreign_files.length} foreign file(s) skipped: ${r.foreign_files.map((f) => `\`${f.path}\` (${f.surface}): ${cell(f.reason)}`).join('; ')}`, '');

  const d = r.diagnosis;
  out.push(`## Findings (${d.findings.length})`, '');
  out.push(...findingsLines(d));

  const values = seriesValues(r);
  const columns = keyColumns(values.keys());
  if (columns.length) {
    out.push('## Key series', '', '| metric | first | last | min | max | trend |', '|---|---:|---:|---:|---:|---|');
    for (const c of columns) {
      const s = r.summaries[c];
      out.push(`| ${cell(c)} | ${num(s.first)} | ${num(s.last)} | ${num(s.min)} | ${num(s.max)} | ${sparkline(values.get(c)!)} |`);
    }
    out.push('');
  }

  const trialSteps = Object.entries(r.trials.at);
  if (trialSteps.length) {
    out.push(`## Captured trials (${r.trials.total} in the run; at the shown steps:)`, '', '| step | trial | outcome | rewards | sample | turns |', '|---:|---|---|---|---|---:|');
    for (const [, list] of trialSteps) {
      for (const t of list) {
        const rewards = t.rewards ? Object.entries(t.rewards).map(([k, v]) => `${k} ${num(v)}`).join(', ') : '—';
        const href = fileHref(t.dir, options.linkBase === undefined ? process.cwd() : options.linkBase);
        out.push(`| ${t.step} | [${cell(t.name)}](${href}) | ${cell(t.outcome)} | ${cell(rewards)} | ${cell(t.sample_id ?? '—')} | ${t.turns} |`);
      }
    }
    out.push('');
  }

  if (r.events.total) {
    out.push('## Events', '', Object.entries(r.events.by_kind).map(([k, n]) => `${k} ×${n}`).join(' · '));
    const notable = r.events.listed.filter((e) => NOTABLE_EVENT.test(e.kind));
    for (const e of notable) out.push(`- ${e.kind}${e.at_step !== null ? ` at step ${e.at_step}` : ''}: ${cell(e.message)}`);
    out.push('');
  }

  if (r.diff) {
    const x = r.diff.result;
    out.push(`## Compared with ${x.b}`, '');
    for (const w of x.warnings) out.push(`> ${w}`, '');
    out.push(x.lead ? `Lead indicator: **${x.lead.metric}** diverges first, at step ${x.lead.step}.` : 'No metric diverged (3 σ for 3 points in a row).');
    out.push(`Config: ${x.trainer_config.length} difference(s); environment: ${x.environment.length}; run facts: ${x.run.length}.`);
    for (const c of x.trainer_config.slice(0, 10)) out.push(`- \`${c.path}\`: ${cell(JSON.stringify(c.a) ?? '—')} → ${cell(JSON.stringify(c.b) ?? '—')}`);
    if (x.findings.only_in_a.length) out.push(`Findings only in A: ${x.findings.only_in_a.map((f) => f.code).join(', ')}.`);
    if (x.findings.only_in_b.length) out.push(`Findings only in B: ${x.findings.only_in_b.map((f) => f.code).join(', ')}.`);
    out.push('');
  }
  return `${out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
