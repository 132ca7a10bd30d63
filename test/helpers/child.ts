/**
 * Spawning TypeScript child scripts (through tsx) and following their stdout line by line.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CHILDREN_DIR = path.join(REPO_ROOT, 'test', 'children');

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunningChild {
  proc: ChildProcess;
  /** Complete stdout lines seen so far. */
  lines: string[];
  stdout(): string;
  stderr(): string;
  /**
   * Resolves with the first stdout line matching `pattern` among lines `fromLine` and later
   * (rejects on exit or timeout).
   */
  waitForLine(pattern: RegExp, timeoutMs?: number, fromLine?: number): Promise<string>;
  exited: Promise<ChildExit>;
  /** Everything about the child, for assertion messages. */
  describe(): string;
}

export interface SpawnOptions {
  env?: Record<string, string | undefined>;
}

/** Spawns `node --import tsx <script> ...args` with cwd at the repository root. */
export function spawnChild(script: string, args: string[], options: SpawnOptions = {}): RunningChild {
  const scriptPath = path.isAbsolute(script) ? script : path.join(CHILDREN_DIR, script);
  const proc = spawn(process.execPath, ['--import', 'tsx', scriptPath, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let partial = '';
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (l: string) => void }[] = [];
  proc.stdout!.setEncoding('utf8');
  proc.stderr!.setEncoding('utf8');
  proc.stdout!.on('data', (chunk: string) => {
    out += chunk;
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      lines.push(line);
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i].pattern.test(line)) {
          waiters[i].resolve(line);
          waiters.splice(i, 1);
        }
      }
    }
  });
  proc.stderr!.on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<ChildExit>((resolve, reject) => {
    proc.on('error', reject);
    // 'close' (not 'exit'): stdout and stderr are fully read by then
    proc.on('close', (code, signal) => resolve({ code, signal }));
  });
  const describe = () =>
    `child ${path.basename(scriptPath)} ${args.join(' ')} (pid ${proc.pid})\n--- stdout (last 2000 chars) ---\n${out.slice(-2000)}\n--- stderr (last 4000 chars) ---\n${err.slice(-4000)}`;
  return {
    proc,
    lines,
    stdout: () => out,
    stderr: () => err,
    exited,
    describe,
    waitForLine(pattern, timeoutMs = 60_000, fromLine = 0) {
      const seen = lines.slice(fromLine).find((l) => pattern.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`timed out after ${timeoutMs} ms waiting for a line matching ${pattern}\n${describe()}`));
        }, timeoutMs);
        const waiter = {
          pattern,
          resolve: (l: string) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        waiters.push(waiter);
        void exited.then((e) => {
          clearTimeout(timer);
          const i = waiters.indexOf(waiter);
          if (i >= 0) {
            waiters.splice(i, 1);
            reject(new Error(`child exited (code ${e.code}, signal ${e.signal}) before printing a line matching ${pattern}\n${describe()}`));
          }
        });
      });
    },
  };
}

/** Waits for the child to exit, killing it (SIGKILL) if it takes longer than `timeoutMs`. */
export async function waitForExit(child: RunningChild, timeoutMs = 60_000): Promise<ChildExit> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.proc.kill('SIGKILL');
      reject(new Error(`child did not exit within ${timeoutMs} ms (killed)\n${child.describe()}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([child.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A fresh temporary directory; removed by the returned cleanup unless RLPROBE_KEEP_TMP is set. */
export function freshTempDir(label: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), `rlprobe-${label}-`));
  return {
    dir,
    cleanup: () => {
      if (!process.env.RLPROBE_KEEP_TMP) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** [from, from+1, …, to-1] */
export function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i < to; i++) out.push(i);
  return out;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
