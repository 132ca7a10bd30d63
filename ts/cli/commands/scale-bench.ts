import { Command, Option, UsageError } from 'clipanion';
import * as t from 'typanion';

import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';
import { isCount, isPositive } from '../option-values.js';

export class ScaleBenchCommand extends ProbeCommand {
  static paths = [['scale-bench']];
  static usage = Command.Usage({
    description: 'Record a realistic synthetic run (or take one), then time every read surface next to DuckDB on the same files',
    details:
      'Writes through the real Recorder (40 scalar step columns, reward components, extras, and samples with ' +
      'realistic text lengths), or with --run reads an existing run without writing. Then times probe info, ' +
      'loading all step columns, one series, two sample scans, probe doctor, diff, report and watch, each next to ' +
      'DuckDB answering the same question on the same files where it has one (its scan into its own columnar ' +
      'result, no value turned into a JS value; @duckdb/node-api is an optional dependency: without it the DuckDB ' +
      'columns show — and a line says how to install it). Each side of each surface runs in a fresh process: its ' +
      'first call, the median of the --warm calls after it, and the peak RSS (VmHWM) after the first call; DuckDB ' +
      'must return the rows rlprobe returns, or the benchmark fails. Prints the date and load average, size on ' +
      'disk, write throughput and peak RSS of the write, and how long probe --version and probe info take to start ' +
      'and answer in a fresh process (the first call and the median of the rest), next to node -e "".',
    examples: [
      ['The 100,000-step benchmark', '$0 scale-bench'],
      ['A million steps, one sample each, kept for inspection', '$0 scale-bench --steps 1000000 --samples-per-step 1 --out /tmp/big'],
      ['An existing run, read only', '$0 scale-bench --run runs/big'],
    ],
  });

  steps = valueOption('--steps', { value: 'N', description: 'Steps to record [default: 100000]', validator: isPositive });
  samplesPerStep = valueOption('--samples-per-step', {
    value: 'N',
    description: 'Samples kept per step (twice as many are offered to the stratified selection) [default: 8]',
    validator: isCount,
  });
  run = valueOption('--run', { value: 'DIR', description: 'Read this existing run instead of recording one (nothing is written)' });
  warm = valueOption('--warm', {
    value: 'N',
    default: '5',
    description: 'Calls after the first in each fresh process; the warm figure is their median',
    validator: isPositive,
  });
  startupRuns = valueOption('--startup-runs', {
    value: 'N',
    default: '8',
    description: 'Fresh processes per CLI start-up figure: the first, then the median of the rest',
    validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(2)),
  });
  out = valueOption('--out', { value: 'DIR', description: 'Keep the recording in this (new) directory' });
  read = Option.String('--read', { hidden: true });
  surface = Option.String('--surface', '0', { hidden: true, validator: isCount });
  window = Option.String('--window', { hidden: true, validator: isCount });
  duckdbSql = Option.String('--duckdb-sql', { hidden: true });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    if (this.run !== undefined) {
      for (const [given, name] of [
        [this.steps, '--steps'],
        [this.samplesPerStep, '--samples-per-step'],
        [this.out, '--out'],
      ] as const) {
        if (given !== undefined) throw new UsageError(`${name} records a new run: it cannot be given with --run ${this.run}, which reads an existing one`);
      }
    }
    const { execScaleBench } = await import('./scale-bench-exec.js');
    // the surfaces that time probe commands run them through this CLI (colourless)
    const args = {
      steps: this.steps ?? 100_000,
      samplesPerStep: this.samplesPerStep ?? 8,
      run: this.run,
      warm: this.warm,
      startupRuns: this.startupRuns,
      out: this.out,
      read: this.read,
      surface: this.surface,
      window: this.window,
      duckdbSql: this.duckdbSql,
      json: this.json,
      context: this.context,
    };
    return execScaleBench(args, (argv, io) => this.cli.run(argv, { ...io, colorDepth: 1 }));
  }
}
