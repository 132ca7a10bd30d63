import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { Command, Option, UsageError } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { buildReport } from '../../report/build-report.js';
import { renderHtml } from '../../report/html.js';
import { renderMarkdown } from '../../report/markdown.js';
import { buildRunsReport } from '../../report/runs-report.js';
import { renderRunsHtml } from '../../report/runs-html.js';
import { renderRunsMarkdown } from '../../report/runs-markdown.js';
import { ProbeCommand } from '../base-command.js';
import { bytes } from '../format.js';
import { valueOption } from '../named-options.js';
import { isCount, isOneOf, isStepList } from '../option-values.js';
import { Progress } from '../progress.js';
import { terminalLine } from '../terminal-text.js';

const FORMATS = ['html', 'md', 'both'] as const;

/** A report rendered: HTML and Markdown (links relative to `linkBase`), and what it holds. */
interface Rendered {
  html: (linkBase: string) => string;
  md: (linkBase: string, htmlLink: string | undefined) => string;
  summary: string;
}

export class ReportCommand extends ProbeCommand {
  static paths = [['report']];
  static usage = Command.Usage({
    description: 'Write a self-contained HTML report (charts, findings, samples, events, manifest) of one run or several, or a Markdown summary',
    details: `
      The HTML file needs no network: uPlot and the data are inlined. Every series group the
      run logged is charted, downsampled to at most 2,000 points a series (the minimum and
      maximum of each bucket, so spikes stay); a spread (reward_std) is a band mean ± spread
      around its mean. The doctor's findings are marked on the charts at their onset; click a
      mark for the evidence and its samples (their prompt and completion shown open). Samples
      are shown for each finding's onset and the first and last sampled steps, or the steps
      given with --steps.

      Several runs (probe report runs/a runs/b runs/c) make one report: a chart per metric with
      a line per run on one step axis, each run's findings, samples and events under its name,
      and the settings that differ. Runs are read one at a time, each downsampled as alone.

      Links to captured trials are relative to the output file's directory (standard output:
      to the current directory), so the report and the runs can be shared or moved together.

      --format md prints a Markdown summary (findings, headline series with sparklines, events)
      for a terminal or a pull-request comment; --format both writes the HTML and a Markdown
      file linking to it. --against adds a comparison of one run with a second (as probe diff).
    `,
    examples: [
      ['Write report.html', '$0 report runs/exp1'],
      ['Somewhere else', '$0 report runs/exp1 --out /tmp/exp1.html'],
      ['Three runs overlaid', '$0 report runs/lr-1e-6 runs/lr-2e-6 runs/lr-4e-6 --out sweep.html'],
      ['Markdown for a PR comment', '$0 report runs/exp1 --format md --link https://ci.example/exp1.html'],
      ['Compared with a baseline', '$0 report runs/lr-2x --against runs/baseline'],
      ['Samples of chosen steps', '$0 report runs/exp1 --steps 100,2500'],
    ],
  });

  runs = Option.Rest({ name: 'run', required: 1 });
  out = valueOption('--out', { value: 'FILE', description: 'Output file (html, both: report.html; md: standard output)' });
  format = valueOption('--format', { value: 'FORMAT', description: 'html, md, or both', default: 'html', validator: isOneOf(FORMATS) });
  against = valueOption('--against', { value: 'RUN', description: 'A second run to compare one run with (a diff section)' });
  steps = valueOption('--steps', { value: 'STEP,…', description: 'Show samples of these steps (comma-separated; of each run)', validator: isStepList });
  perReason = valueOption('--samples-per-reason', { value: 'N', description: 'Samples shown per capture reason at each step', default: '4', validator: isCount });
  buckets = valueOption('--buckets', { value: 'N', description: 'Downsampling buckets per chart (2 points each)', default: '1000', validator: isCount });
  samples = Option.Boolean('--samples', true, { description: 'Read samples (--no-samples: charts and findings only)' });
  link = valueOption('--link', { value: 'URL', description: 'Markdown: where the HTML report will be (URL or path)' });

  async exec(): Promise<number> {
    if (this.against !== undefined && this.runs.length > 1) {
      throw new UsageError(`--against compares one run with another: give one run (got ${this.runs.length}), or drop --against to overlay them`);
    }
    const readers = this.runs.map((r) => RunReader.open(r));
    const progress = new Progress(this.context.stderr, 'report');
    let stages = 0;
    const onProgress = (done: number, total: number, stage: string) => {
      stages = total;
      progress.update(done, total, stage);
    };
    const options = { steps: this.steps, samplesPerReason: this.perReason, buckets: this.buckets, samples: this.samples, onProgress };
    const rendered = readers.length === 1 ? await this.oneRun(readers[0], options) : await this.severalRuns(readers, options);
    progress.update(stages, stages, 'done');
    progress.done();
    if (this.format === 'md') {
      // links from standard output are relative to the current directory
      const md = rendered.md(this.out === undefined ? process.cwd() : path.dirname(path.resolve(this.out)), this.link);
      if (this.out === undefined) this.context.stdout.write(md);
      else {
        writeFileSync(this.out, md);
        this.context.stdout.write(`${terminalLine(`wrote ${this.out} (${bytes(Buffer.byteLength(md))}): ${rendered.summary}`)}\n`);
      }
      return 0;
    }
    const htmlPath = this.out ?? 'report.html';
    const base = path.dirname(path.resolve(htmlPath));
    const html = rendered.html(base);
    writeFileSync(htmlPath, html);
    this.context.stdout.write(`${terminalLine(`wrote ${htmlPath} (${bytes(Buffer.byteLength(html))}): ${rendered.summary}`)}\n`);
    if (this.format === 'both') {
      const mdPath = htmlPath.replace(/\.html?$/i, '') + '.md';
      // the Markdown sits beside the HTML, so a relative link survives moving both
      writeFileSync(mdPath, rendered.md(base, this.link ?? encodeURI(path.basename(htmlPath))));
      this.context.stdout.write(`${terminalLine(`wrote ${mdPath}`)}\n`);
    }
    return 0;
  }

  private async oneRun(reader: RunReader, options: Parameters<typeof buildReport>[1]): Promise<Rendered> {
    const against = this.against === undefined ? undefined : RunReader.open(this.against);
    const report = await buildReport(reader, { ...options, against });
    return {
      html: (linkBase) => renderHtml(report, { linkBase }),
      md: (linkBase, htmlLink) => renderMarkdown(report, { htmlLink, linkBase }),
      summary: `${report.charts.length} charts, ${report.diagnosis.findings.length} findings, ${report.forensics.length} sample steps, ${report.events.total} events`,
    };
  }

  private async severalRuns(readers: RunReader[], options: Parameters<typeof buildRunsReport>[1]): Promise<Rendered> {
    const report = await buildRunsReport(readers, options);
    const sum = (f: (r: (typeof report.runs)[number]['report']) => number) => report.runs.reduce((n, r) => n + f(r.report), 0);
    return {
      html: (linkBase) => renderRunsHtml(report, { linkBase }),
      md: (linkBase, htmlLink) => renderRunsMarkdown(report, { htmlLink, linkBase }),
      summary: `${report.runs.length} runs, ${report.charts.length} charts, ${sum((r) => r.diagnosis.findings.length)} findings, ${sum((r) => r.forensics.length)} sample steps, ${sum((r) => r.events.total)} events`,
    };
  }
}
