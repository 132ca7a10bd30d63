/** `probe scale-bench`, loaded only when it runs: scale-bench.ts declares its options and help. */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { BaseContext } from 'clipanion';

import type { ProbeRunner } from '../../bench/scale.js';
import { RlprobeError } from '../../errors.js';

export interface ScaleBenchArgs {
  steps: number;
  samplesPerStep: number;
  /** Read this run instead of recording one. */
  run: string | undefined;
  warm: number;
  startupRuns: number;
  out: string | undefined;
  /** Hidden: time one of rlprobe's read surfaces of this run, in this (fresh) process. */
  read: string | undefined;
  surface: number;
  /** Hidden: the first of the 100 steps whose samples are read in full. */
  window: number | undefined;
  /** Hidden: time DuckDB answering this query, in this (fresh) process. */
  duckdbSql: string | undefined;
  json: boolean;
  context: BaseContext;
}

export async function execScaleBench(command: ScaleBenchArgs, probe: ProbeRunner): Promise<number> {
  const print = (text: string) => command.context.stdout.write(`${text}\n`);
  if (command.duckdbSql !== undefined) {
    // DuckDB's side of a surface, in a child process that never loads rlprobe's reader
    const { answerWithDuckDb } = await import('../../bench/scale-duckdb.js');
    print(JSON.stringify(await answerWithDuckDb(command.duckdbSql, command.warm)));
    return 0;
  }
  const { formatReport, readInChildren, readScaleSurface, timeStartup, writeScaleRun } = await import('../../bench/scale.js');
  if (command.read !== undefined) {
    // rlprobe's side of a surface, in a child process of its own
    const window: [number, number] | null = command.window === undefined ? null : [command.window, command.window + 99];
    print(JSON.stringify(await readScaleSurface(command.read, command.surface, probe, { warm: command.warm, window })));
    return 0;
  }
  if (command.out !== undefined && existsSync(command.out) && readdirSync(command.out).length > 0) {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `--out ${command.out} is not empty: the benchmark records a new run`);
  }
  const dir = command.run ?? command.out ?? mkdtempSync(path.join(os.tmpdir(), 'rlprobe-scale-'));
  try {
    const w = command.run === undefined ? writeScaleRun(dir, command.steps, command.samplesPerStep, (s) => command.context.stderr.write(`${s}\n`)) : null;
    // the children run this CLI as it was started (the built one, or the sources under a TypeScript loader)
    const r = readInChildren(dir, (args) => [process.argv[1], ...args], { warm: command.warm });
    const startup = timeStartup(dir, [...process.execArgv, process.argv[1]], command.startupRuns);
    print(command.json ? JSON.stringify({ write: w, read: r, startup }) : formatReport(w, r, startup));
  } finally {
    if (command.run === undefined && command.out === undefined) rmSync(dir, { recursive: true, force: true });
  }
  return 0;
}
