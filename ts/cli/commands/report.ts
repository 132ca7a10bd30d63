import { Command, Option, UsageError } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';
import { isCount, isOneOf, isStepList } from '../option-values.js';

const FORMATS = ['html', 'md', 'both'] as const;

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
    const { execReport } = await import('./report-exec.js');
    return execReport(this);
  }
}
