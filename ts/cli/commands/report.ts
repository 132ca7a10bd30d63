import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { Command, Option } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { buildReport } from '../../report/build-report.js';
import { renderHtml } from '../../report/html.js';
import { renderMarkdown } from '../../report/markdown.js';
import { ProbeCommand } from '../base-command.js';
import { bytes } from '../format.js';
import { valueOption } from '../named-options.js';
import { isCount, isOneOf, isStepList } from '../option-values.js';
import { Progress } from '../progress.js';
import { terminalLine } from '../terminal-text.js';

const FORMATS = ['html', 'md', 'both'] as const;

export class ReportCommand extends ProbeCommand {
  static paths = [['report']];
  static usage = Command.Usage({
    description: 'Write a self-contained HTML report (charts, findings, samples, events, manifest), or a Markdown summary',
    details: `
      The HTML file needs no network: uPlot and the data are inlined. Every series group the
      run logged is charted, downsampled to at most 2,000 points a series (the minimum and
      maximum of each bucket, so spikes stay). The doctor's findings are marked on the charts at
      their onset; click a mark for the evidence and its samples. Samples are shown for the
      first and last sampled steps and each finding's onset, or the steps given with --steps.

      --format md prints a Markdown summary (findings, headline series with sparklines, events)
      for a terminal or a pull-request comment; --format both writes the HTML and a Markdown
      file linking to it. --against adds a comparison with a second run (as probe diff).
    `,
    examples: [
      ['Write report.html', '$0 report runs/exp1'],
      ['Somewhere else', '$0 report runs/exp1 --out /tmp/exp1.html'],
      ['Markdown for a PR comment', '$0 report runs/exp1 --format md --link https://ci.example/exp1.html'],
      ['Compared with a baseline', '$0 report runs/lr-2x --against runs/baseline'],
      ['Samples of chosen steps', '$0 report runs/exp1 --steps 100,2500'],
    ],
  });

  run = Option.String({ name: 'run' });
  out = valueOption('--out', { value: 'FILE', description: 'Output file (html, both: report.html; md: standard output)' });
  format = valueOption('--format', { value: 'FORMAT', description: 'html, md, or both', default: 'html', validator: isOneOf(FORMATS) });
  against = valueOption('--against', { value: 'RUN', description: 'A second run to compare with (a diff section)' });
  steps = valueOption('--steps', { value: 'STEP,…', description: 'Show samples of these steps (comma-separated)', validator: isStepList });
  perReason = valueOption('--samples-per-reason', { value: 'N', description: 'Samples shown per capture reason at each step', default: '4', validator: isCount });
  buckets = valueOption('--buckets', { value: 'N', description: 'Downsampling buckets per chart (2 points each)', default: '1000', validator: isCount });
  samples = Option.Boolean('--samples', true, { description: 'Read samples (--no-samples: charts and findings only)' });
  link = valueOption('--link', { value: 'URL', description: 'Markdown: where the HTML report will be (URL or path)' });

  async exec(): Promise<number> {
    const reader = RunReader.open(this.run);
    const against = this.against === undefined ? undefined : RunReader.open(this.against);
    const progress = new Progress(this.context.stderr, 'report');
    let stages = 0;
    const report = await buildReport(reader, {
      against,
      steps: this.steps,
      samplesPerReason: this.perReason,
      buckets: this.buckets,
      samples: this.samples,
      onProgress: (done, total, stage) => {
        stages = total;
        progress.update(done, total, stage);
      },
    });
    const summary = `${report.charts.length} charts, ${report.diagnosis.findings.length} findings, ${report.forensics.length} sample steps, ${report.events.total} events`;
    if (this.format === 'md') {
      const md = renderMarkdown(report, { htmlLink: this.link });
      progress.update(stages, stages, 'done');
      progress.done();
      if (this.out === undefined) this.context.stdout.write(md);
      else {
        writeFileSync(this.out, md);
        this.context.stdout.write(`${terminalLine(`wrote ${this.out} (${bytes(Buffer.byteLength(md))}): ${summary}`)}\n`);
      }
      return 0;
    }
    const htmlPath = this.out ?? 'report.html';
    const html = renderHtml(report);
    writeFileSync(htmlPath, html);
    progress.update(stages, stages, 'done');
    progress.done();
    this.context.stdout.write(`${terminalLine(`wrote ${htmlPath} (${bytes(Buffer.byteLength(html))}): ${summary}`)}\n`);
    if (this.format === 'both') {
      const mdPath = htmlPath.replace(/\.html?$/i, '') + '.md';
      // the Markdown sits beside the HTML, so a relative link survives moving both
      writeFileSync(mdPath, renderMarkdown(report, { htmlLink: this.link ?? encodeURI(path.basename(htmlPath)) }));
      this.context.stdout.write(`${terminalLine(`wrote ${mdPath}`)}\n`);
    }
    return 0;
  }
}
