import { Command, Option } from 'clipanion';
import * as t from 'typanion';

import { ProbeCommand } from '../base-command.js';

export class ScaleBenchCommand extends ProbeCommand {
  static paths = [['scale-bench']];
  static usage = Command.Usage({
    description: 'Record a realistic synthetic run, then time every read surface (and DuckDB on the same files)',
    details:
      'Writes through the real Recorder (40 scalar step columns, reward components, extras, and samples with ' +
      'realistic text lengths), then times probe info, loading all step columns, one series and two sample ' +
      'scans, each next to DuckDB answering the same question (when @duckdb/node-api is installed). ' +
      'Prints size on disk, write throughput and the peak RSS of each phase, and how long probe --version and probe info ' +
      'take to start and answer in a fresh process (the first call and the median of the rest), next to node -e "".',
    examples: [
      ['The 100,000-step benchmark', '$0 scale-bench'],
      ['A million steps, one sample each, kept for inspection', '$0 scale-bench --steps 1000000 --samples-per-step 1 --out /tmp/big'],
    ],
  });

  steps = Option.String('--steps', '100000', { description: 'Steps to record', validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(1)) });
  samplesPerStep = Option.String('--samples-per-step', '8', {
    description: 'Samples kept per step (twice as many are offered to the stratified selection)',
    validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(0)),
  });
  startupRuns = Option.String('--startup-runs', '8', {
    description: 'Fresh processes per CLI start-up figure: the first, then the median of the rest',
    validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(2)),
  });
  out = Option.String('--out', { description: 'Keep the recording in this (new) directory' });
  read = Option.String('--read', { hidden: true });
  surface = Option.String('--surface', '0', { hidden: true, validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(0)) });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    const { execScaleBench } = await import('./scale-bench-exec.js');
    // the surfaces that time probe commands run them through this CLI (colourless)
    return execScaleBench(this, (args, io) => this.cli.run(args, { ...io, colorDepth: 1 }));
  }
}
