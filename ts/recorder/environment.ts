import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { VERSION } from '../version.js';

/** Packages whose versions help attribute a run, when the training script can resolve them. */
const INTERESTING_PACKAGES = [
  'rlprobe',
  '@huggingface/transformers',
  'onnxruntime-node',
  '@tensorflow/tfjs-node',
  '@tensorflow/tfjs-node-gpu',
  'openai',
  '@anthropic-ai/sdk',
  'zod',
];

const COMMAND_TIMEOUT_MS = 3000;

function run(command: string, args: string[]): string | undefined {
  try {
    return execFileSync(command, args, {
      encoding: 'utf8',
      timeout: COMMAND_TIMEOUT_MS,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

function onPath(command: string): boolean {
  const dirs = (process.env.PATH ?? '').split(path.delimiter);
  const names = process.platform === 'win32' ? [`${command}.exe`, command] : [command];
  return dirs.some((d) => d && names.some((n) => existsSync(path.join(d, n))));
}

function packageVersions(): Record<string, string> {
  const out: Record<string, string> = {};
  const req = createRequire(path.join(process.cwd(), 'noop.js'));
  for (const name of INTERESTING_PACKAGES) {
    try {
      const pkg = JSON.parse(readFileSync(req.resolve(`${name}/package.json`), 'utf8')) as { version?: string };
      if (pkg.version) out[name] = pkg.version;
    } catch {
      // not installed, or exports do not expose package.json: skipped
    }
  }
  if (!out.rlprobe && VERSION !== 'unknown') out.rlprobe = VERSION;
  return out;
}

function gpus(): Array<Record<string, string>> | undefined {
  if (!onPath('nvidia-smi')) return undefined;
  const csv = run('nvidia-smi', ['--query-gpu=name,memory.total,driver_version', '--format=csv,noheader']);
  if (!csv) return undefined;
  return csv
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [name, memory, driver] = line.split(',').map((s) => s.trim());
      return { name, memory_total: memory, driver_version: driver };
    });
}

/**
 * The environment block of the manifest. Every probe is independent and skipped when it
 * fails: capture is best-effort and never fatal.
 */
export function captureEnvironment(): Record<string, unknown> {
  const env: Record<string, unknown> = {};
  const probes: Array<[string, () => unknown]> = [
    ['node', () => process.version],
    ['platform', () => `${os.type()} ${os.release()} ${process.arch}`],
    ['os', () => ({ platform: process.platform, release: os.release(), arch: process.arch, cpus: os.cpus().length, total_memory: os.totalmem() })],
    ['argv', () => process.argv],
    ['packages', packageVersions],
    ['git_sha', () => run('git', ['rev-parse', 'HEAD'])],
    ['git_dirty', () => {
      const status = run('git', ['status', '--porcelain', '--untracked-files=no']);
      return status === undefined ? undefined : status.length > 0;
    }],
    ['gpus', gpus],
  ];
  for (const [key, probe] of probes) {
    try {
      const value = probe();
      if (value !== undefined) env[key] = value;
    } catch {
      // skipped, never fatal
    }
  }
  return env;
}
