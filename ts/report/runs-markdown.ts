/**
 * `probe report A B C --format md`: the report of several runs for a terminal or a pull
 * request — the runs, each run's findings under its name, the headline series of every run
 * (numbers and a sparkline), the settings that differ, and each run's notable events.
 */
import { fileHref } from './file-links.js';
import { NOTABLE_EVENT, cell, findingsLines, keyColumns, sparkline } from './markdown.js';
import type { MarkdownOptions } from './markdown.js';
import { num } from './html-parts.js';
import type { RunsReport } from './runs-report.js';

function findingCount(n: number): string {
  return n === 0 ? 'no findings' : `${n} finding${n === 1 ? '' : 's'}`;
}

export function renderRunsMarkdown(rr: RunsReport, options: MarkdownOptions = {}): string {
  const links = options.linkBase === undefined ? process.cwd() : options.linkBase;
  const out: string[] = [];
  out.push(`# rlprobe report: ${rr.runs.length} runs`, '');
  out.push('| run | directory | algorithm | model | steps | samples | status | findings |', '|---|---|---|---|---:|---:|---|---|');
  for (const { label, report: r } of rr.runs) {
    const m = r.run.manifest;
    const steps = r.run.rows ? `${r.run.rows.toLocaleString('en-US')} (${r.run.first_step}–${r.run.last_step})` : '0';
    out.push(`| ${cell(label)} | \`${cell(r.run.dir)}\` | ${cell(m.algorithm)} | ${cell(m.model_name ?? '—')} | ${steps} | ${r.run.samples.toLocaleString('en-US')} | ${cell(r.run.status.summary)} | ${findingCount(r.diagnosis.findings.length)} |`);
  }
  const dirs = rr.runs.map((r) => r.report.run.dir).join(' ');
  out.push('', options.htmlLink ? `Charts, samples and evidence: [HTML report](${options.htmlLink})` : `Charts, samples and evidence: \`probe report ${dirs} --out report.html\``, '');
  for (const { label, report: r } of rr.runs) {
    for (const d of r.damaged) out.push(`> **${cell(label)}: damaged ${d.surface}** could not be read (shown without it): ${cell(d.error)}`, '');
    if (r.foreign_files.length) out.push(`> ${cell(label)}: ${r.foreign_files.length} foreign file(s) skipped: ${r.foreign_files.map((f) => `\`${f.path}\` (${f.surface}): ${cell(f.reason)}`).join('; ')}`, '');
  }

  const total = rr.runs.reduce((n, r) => n + r.report.diagnosis.findings.length, 0);
  out.push(`## Findings (${total})`, '');
  for (const { label, report: r } of rr.runs) {
    const d = r.diagnosis;
    out.push(`### ${label}: ${findingCount(d.findings.length)}`, '');
    out.push(...findingsLines(d));
  }

  // the overlay's values of each run (null where it logged nothing): a sparkline skips the gaps
  const byColumn = new Map<string, Map<number, Array<number | null>>>();
  const put = (column: string, run: number, values: Array<number | null>) => {
    let runs = byColumn.get(column);
    if (!runs) byColumn.set(column, (runs = new Map()));
    runs.set(run, values);
  };
  for (const c of rr.charts) {
    c.series.forEach((s, k) => put(s.column, s.run!, c.values[k]));
    for (const b of c.bands) put(b.column, b.run!, b.values);
  }
  const columns = keyColumns(byColumn.keys());
  if (columns.length) {
    out.push('## Key series', '', '| metric | run | first | last | min | max | trend |', '|---|---|---:|---:|---:|---:|---|');
    for (const c of columns) {
      for (const [k, run] of rr.runs.entries()) {
        const values = byColumn.get(c)!.get(k);
        const s = run.report.summaries[c];
        if (!values || !s) continue;
        out.push(`| ${cell(c)} | ${cell(run.label)} | ${num(s.first)} | ${num(s.last)} | ${num(s.min)} | ${num(s.max)} | ${sparkline(values)} |`);
      }
    }
    out.push('');
  }

  if (rr.differences.length) {
    out.push(`## Differences (${rr.differences.length})`, '', `| setting | ${rr.runs.map((r) => cell(r.label)).join(' | ')} |`, `|---|${rr.runs.map(() => '---').join('|')}|`);
    for (const d of rr.differences) out.push(`| \`${cell(d.key)}\` | ${d.values.map((v) => (v === undefined ? 'not set' : `\`${cell(JSON.stringify(v))}\``)).join(' | ')} |`);
    out.push('');
  }

  const trials = rr.runs.flatMap(({ label, report: r }) => Object.values(r.trials.at).flat().map((t) => ({ label, t })));
  if (trials.length) {
    out.push('## Captured trials at the shown steps', '', '| run | step | trial | outcome | sample |', '|---|---:|---|---|---|');
    for (const { label, t } of trials) out.push(`| ${cell(label)} | ${t.step} | [${cell(t.name)}](${fileHref(t.dir, links)}) | ${cell(t.outcome)} | ${cell(t.sample_id ?? '—')} |`);
    out.push('');
  }

  if (rr.runs.some((r) => r.report.events.total)) {
    out.push('## Events', '');
    for (const { label, report: r } of rr.runs) {
      if (!r.events.total) continue;
      out.push(`- **${cell(label)}**: ${Object.entries(r.events.by_kind).map(([k, n]) => `${k} ×${n}`).join(' · ')}`);
      for (const e of r.events.listed.filter((x) => NOTABLE_EVENT.test(x.kind))) out.push(`  - ${e.kind}${e.at_step !== null ? ` at step ${e.at_step}` : ''}: ${cell(e.message)}`);
    }
    out.push('');
  }
  return `${out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
