import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';

import { Command, Option } from 'clipanion';
import * as t from 'typanion';

import { formatReport, readInChildren, readScaleSurface, writeScaleRun } from '../../bench/scale.js';
import { RlprobeError } from '../../errors.js';
import { ProbeCommand } from '../base-command.js';

export class ScaleBenchCommand extends ProbeCommand {
  static paths = [['scale-bench']];
  static usage = Command.Usage({
    description: 'Record a realistic synthetic run, then time every read surface (and DuckDB on the same files)',
    details:
      'Writes through the real Recorder (40 scalar step columns, reward components, extras, and samples with ' +
      'realistic text lengths), then times probe info, loading all step columns, one series and two sample ' +
      'scans, each next to DuckDB answering the same question (when @duckdb/node-api is installed). ' +
      'Prints size on disk, write throughput and the peak RSS of each phase.',
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
  out = Option.String('--out', { description: 'Keep the recording in this (new) directory' });
  read = Option.String('--read', { hidden: true });
  surface = Option.String('--surface', '0', { hidden: true, validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(0)) });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    if (this.read !== undefined) {
      // one surface of the read phase, in a child process of its own
      // the surfaces that time probe commands run them through this CLI (colourless)
      const probe = (args: string[], io: { stdout: Writable; stderr: Writable }) => this.cli.run(args, { ...io, colorDepth: 1 });
      this.context.stdout.write(`${JSON.stringify(await readScaleSurface(this.read, this.surface, probe))}\n`);
      return 0;
    }
    if (this.out !== undefined && existsSync(this.out) && readdirSync(this.out).length > 0) {
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `--out ${this.out} is not empty: the benchmark records a new run`);
    }
    const dir = this.out ?? mkdtempSync(path.join(os.tmpdir(), 'rlprobe-scale-'));
    try {
      const w = writeScaleRun(dir, this.steps, this.samplesPerStep, (s) => this.context.stderr.write(`${s}\n`));
      const r = readInChildren(dir, (i) => [process.argv[1], 'scale-bench', '--read', dir, '--surface', String(i)]);
      this.context.stdout.write(this.json ? `${JSON.stringify({ write: w, read: r })}\n` : `${formatReport(w, r)}\n`);
    } finally {
      if (this.out === undefined) rmSync(dir, { recursive: true, force: true });
    }
    return 0;
  }
}
