/**
 * Shared helpers for the rlprobe tests: temporary directories, child processes (the CLI,
 * small Node scripts), process-listener counts and environment overrides.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: the repository's top directory. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Absolute import specifier of the public entry point, for child scripts. */
export const INDEX_TS = path.join(ROOT, 'ts', 'index.ts');

const created: string[] = [];

/** A fresh temporary directory, removed by `cleanupTempDirs()`. */
export function tempDir(prefix = 'rlprobe-test-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(dir);
  return dir;
}

export function cleanupTempDirs(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Options that keep a test recorder from publishing on its own clock. */
export const QUIET = { installHandlers: false, flushIntervalMs: 3_600_000, flushSteps: 1_000_000 } as const;

/** Process events the crash hooks listen to. */
export const HOOKED_EVENTS = ['exit', 'uncaughtExceptionMonitor', 'SIGTERM', 'SIGINT', 'SIGHUP'] as const;

export function listenerCounts(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of HOOKED_EVENTS) out[e] = process.listenerCount(e);
  return out;
}

/** Runs `fn` with environment variables set (undefined deletes), restoring them after. */
export async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T | Promise<T>): Promise<T> {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(vars)) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

export function stripAnsi(s: string): string {
  return s.replace(ANSI, '');
}

/** At most this many test children at once: keeps a 2-core CI machine responsive. */
const MAX_CHILDREN = 3;
let running = 0;
const waiting: Array<() => void> = [];

async function limited<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_CHILDREN) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next) next(); // hand the slot over
    else running--;
  }
}

/** Runs node (with tsx) and resolves with its exit code and output, whatever the exit. */
export function runNode(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<ChildResult> {
  return limited(() => spawnNode(args, options));
}

function spawnNode(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', ...args],
      {
        cwd: options.cwd ?? ROOT,
        env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', RUST_BACKTRACE: '0', ...options.env },
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 16 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (error && typeof (error as NodeJS.ErrnoException).code === 'string') {
          reject(error); // spawn failure, not an exit code
          return;
        }
        const e = error as (Error & { code?: number | null; signal?: NodeJS.Signals | null; killed?: boolean }) | null;
        if (e?.killed) {
          reject(new Error(`child timed out: node ${args.join(' ')}\n${stderr}`));
          return;
        }
        resolve({ code: e ? (e.code ?? null) : 0, signal: e ? (e.signal ?? null) : null, stdout: stripAnsi(stdout), stderr: stripAnsi(stderr) });
      },
    );
  });
}

/** Runs the `probe` CLI from the sources: `node --import tsx ts/cli/bin.ts ...args`. */
export function runCli(args: string[]): Promise<ChildResult> {
  return runNode(['ts/cli/bin.ts', ...args], { cwd: ROOT });
}

/** Runs an ES module snippet (with tsx, so it may import ts/ files) with extra argv. */
export function runScript(code: string, argv: string[] = [], env?: NodeJS.ProcessEnv): Promise<ChildResult> {
  return runNode(['--input-type=module', '-e', code, ...argv], { cwd: ROOT, env });
}
