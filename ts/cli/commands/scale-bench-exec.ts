/** `probe scale-bench`, loaded only when it runs: scale-bench.ts declares its options and help. */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { BaseContext } from 'clipanion';

import { formatReport, readInChildren, readScaleSurface, timeStartup, writeScaleRun } from '../../bench/scale.js';
import type { ProbeRunner } from '../../bench/scale.js';
import { RlprobeError } from '../../errors.js';

export interface ScaleBenchArgs {
  steps: number;
  samplesPerStep: number;
  startupRuns: number;
  out: string | undefined;
  /** Hidden: time one read surface of this run, in this (fresh) process. */
  read: string | undefined;
  surface: number;
  json: boolean;
  context: BaseContext;
}

export async function execScaleBench(command: ScaleBenchArgs, probe: ProbeRunner): Promise<number> {
  if (command.read !== undefined) {
    // one surface of the read phase, in a child process of its own
    command.context.stdout.write(`${JSON.stringify(await readScaleSurface(command.read, command.surface, probe))}\n`);
    return 0;
  }
  if (command.out !== undefined && existsSync(command.out) && readdirSync(command.out).length > 0) {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `--out ${command.out} is not empty: the benchmark records a new run`);
  }
  const dir = command.out ?? mkdtempSync(path.join(os.tmpdir(), 'rlprobe-scale-'));
  try {
    const w = writeScaleRun(dir, command.steps, command.samplesPerStep, (s) => command.context.stderr.write(`${s}\n`));
    const r = readInChildren(dir, (i) => [process.argv[1], 'scale-bench', '--read', dir, '--surface', String(i)]);
    // this CLI as it was started (the built one, or the sources under a TypeScript loader)
    const startup = timeStartup(dir, [...process.execArgv, process.argv[1]], command.startupRuns);
    command.context.stdout.write(command.json ? `${JSON.stringify({ write: w, read: r, startup })}\n` : `${formatReport(w, r, startup)}\n`);
  } finally {
    if (command.out === undefined) rmSync(dir, { recursive: true, force: true });
  }
  return 0;
}
