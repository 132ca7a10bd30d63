/**
 * Harbor trial directories for test/trials.test.ts: built on disk in the test's own temporary
 * directories, with the Harbor fixtures of test/fixtures/harbor (read-only) copied in where a
 * real trajectory is wanted. Plus the independent references the tests check the capture
 * against: sha256 with node:crypto, FNV-1a 64 with BigInt (capture keys and keyed span ids),
 * recursive file listings and byte scans of a run directory, and the `probe` CLI run in this
 * process.
 */
import { createHash } from 'node:crypto';
import { cpSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';


import { Recorder } from '../../ts/index.js';
import { ROOT } from './fixtures.js';
export { probe } from './in-process-cli.js';
export type { CliResult } from './in-process-cli.js';

/** The Harbor fixtures (read-only inputs; provenance in test/fixtures/harbor/SOURCES.md). */
export const HARBOR = path.resolve(ROOT, 'test', 'fixtures', 'harbor');
export const CLAUDE_CODE = path.join(HARBOR, 'claude-code-atif-v1.7', 'pass');
export const SUBAGENTS = path.join(HARBOR, 'terminus-2-golden', 'context-summarization-subagents-v1.7');
export const CONTINUATION = path.join(HARBOR, 'terminus-2-golden', 'linear-history-continuation-v1.7');
export const TIMEOUT = path.join(HARBOR, 'terminus-2-golden', 'timeout-v1.6');

/** No process hooks, no environment capture, no clock flushes. */
export const FAST = { installHandlers: false, captureEnvironment: false, flushIntervalMs: 3_600_000, flushSteps: 1_000_000 } as const;

// ---- references computed independently of the code under test

export function sha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** FNV-1a 64 over the UTF-8 bytes of `s`, with BigInt. */
export function fnv1a64(s: string): string {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(s)) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

/** docs/format.md#trials: `<slug>.<12 hex of FNV-1a 64 of "rlprobe.trial\0<identity>">`. */
export function expectedKey(slug: string, identity: string): string {
  return `${slug}.${fnv1a64(`rlprobe.trial\u0000${identity}`).slice(0, 12)}`;
}

/** The keyed id of span path `p` of capture `key` in run `runId`. */
export function expectedSpanId(runId: string, key: string, p: string): string {
  return fnv1a64(`${runId}\u0000trial/${key}/${p}`);
}

// ---- files

export type TreeValue = string | Buffer | Record<string, unknown> | unknown[];

/** Writes `files` (trial-relative path → text, bytes, or a value written as JSON) under `root`. */
export function writeTree(root: string, files: Record<string, TreeValue>): void {
  for (const [rel, value] of Object.entries(files)) {
    const file = path.join(root, ...rel.split('/'));
    mkdirSync(path.dirname(file), { recursive: true });
    const bytes = typeof value === 'string' || Buffer.isBuffer(value) ? value : `${JSON.stringify(value, null, 2)}\n`;
    writeFileSync(file, bytes);
  }
}

/** Regular files under `dir`, relative POSIX paths, sorted (symbolic links are not followed). */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d)) {
      const full = path.join(d, name);
      const r = rel === '' ? name : `${rel}/${name}`;
      const st = lstatSync(full);
      if (st.isDirectory()) walk(full, r);
      else if (st.isFile()) out.push(r);
    }
  };
  walk(dir, '');
  return out.sort();
}

/** Every path (files, directories, links) under `dir`, relative, sorted. */
export function listAll(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d)) {
      const full = path.join(d, name);
      const r = rel === '' ? name : `${rel}/${name}`;
      out.push(r);
      if (lstatSync(full).isDirectory()) walk(full, r);
    }
  };
  walk(dir, '');
  return out.sort();
}

/** Files under `dir` whose bytes contain `needle`. */
export function filesContaining(dir: string, needle: string | Buffer): string[] {
  const n = typeof needle === 'string' ? Buffer.from(needle) : needle;
  return listFiles(dir).filter((rel) => readFileSync(path.join(dir, ...rel.split('/'))).includes(n));
}

export function readJson<T = any>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

// ---- runs

/** A closed, empty run directory at `dir`. */
export async function makeRun(dir: string, runId: string): Promise<string> {
  const rec = new Recorder(dir, { ...FAST, runId });
  await rec.close();
  return dir;
}

// ---- trials

/** Turns and tool calls of an ATIF document, counted from its JSON. */
export function atifCounts(doc: any): { turns: number; toolCalls: number } {
  const steps: any[] = doc.steps ?? [];
  return { turns: steps.length, toolCalls: steps.reduce((n, s) => n + (Array.isArray(s.tool_calls) ? s.tool_calls.length : 0), 0) };
}

/** A small ATIF-v1.7 document: `calls[i]` tool calls on step i+1 (agent steps), timestamps a second apart. */
export function smallAtif(sessionId: string, calls: number[], t0 = Date.UTC(2025, 10, 1, 10, 0, 0)): Record<string, unknown> {
  return {
    schema_version: 'ATIF-v1.7',
    session_id: sessionId,
    agent: { name: 'mini-agent', version: '0.1', model_name: 'mini-model' },
    steps: calls.map((n, i) => {
      const id = i + 1;
      const tool_calls = Array.from({ length: n }, (_, k) => ({ tool_call_id: `${sessionId}-c${id}-${k}`, function_name: k % 2 ? 'read' : 'bash', arguments: { cmd: `echo ${id}.${k}` } }));
      return {
        step_id: id,
        timestamp: new Date(t0 + i * 1000).toISOString(),
        source: i === 0 ? 'user' : 'agent',
        message: i === 0 ? 'do the task' : `step ${id}`,
        ...(n > 0 ? { tool_calls, observation: { results: tool_calls.map((c) => ({ source_call_id: c.tool_call_id, content: `out ${c.tool_call_id}` })) } } : {}),
      };
    }),
  };
}

export const PASS_ID = '0b7e5c1a-4f2d-4c8e-9a61-3d2f1e0c9b8a';
export const PASS_NAME = 'hello-world__AbC1234';

/** result.json of a passing trial (Harbor 0.2x field names). */
export function passResult(id = PASS_ID, name = PASS_NAME): Record<string, unknown> {
  return {
    id,
    task_name: 'hello-world',
    trial_name: name,
    trial_uri: `file:///jobs/j1/${name}`,
    task_id: { path: 'tasks/hello-world' },
    agent_info: { name: 'claude-code', version: '2.0.1', model_info: { name: 'claude-sonnet-4-5', provider: 'anthropic' } },
    agent_result: { n_input_tokens: 485630, n_cache_tokens: 480000, n_output_tokens: 2350, cost_usd: 0.4125, metadata: {} },
    verifier_result: { rewards: { reward: 1, tests_passed: 0.75 } },
    exception_info: null,
    started_at: '2025-11-01T10:00:00.000000',
    finished_at: '2025-11-01T10:07:30.500000',
    environment_setup: { started_at: '2025-11-01T10:00:00.000000', finished_at: '2025-11-01T10:00:20.000000' },
    agent_setup: { started_at: '2025-11-01T10:00:20.000000', finished_at: '2025-11-01T10:01:00.000000' },
    agent_execution: { started_at: '2025-11-01T10:01:00.000000', finished_at: '2025-11-01T10:06:00.000000' },
    verifier: { started_at: '2025-11-01T10:06:00.000000', finished_at: '2025-11-01T10:07:30.000000' },
  };
}

/**
 * Test 1's trial: result with verifier rewards, config (one container artifact), lock, log,
 * the claude-code ATIF fixture, verifier output, artifacts manifest and files. Returns the
 * expected ledger (path → role and declared_by); every entry is collected.
 */
export function buildPassingTrial(dir: string, result: Record<string, unknown> = passResult()): Map<string, { role: string; declared_by: string[] }> {
  writeTree(dir, {
    'result.json': result,
    'config.json': {
      trial_name: result.trial_name,
      task: { name: 'hello-world', path: 'tasks/hello-world' },
      agent: { name: 'claude-code', model_name: 'anthropic/claude-sonnet-4-5' },
      artifacts: ['/out/report.json'],
    },
    'lock.json': { harbor_version: '0.22.0', task_digest: 'sha256:deadbeef' },
    'trial.log': 'INFO starting trial\nINFO agent finished\nINFO verifier finished\n',
    'agent/claude-code.txt': 'claude-code session log\n',
    'verifier/test-stdout.txt': '===== 3 passed, 1 failed in 0.12s =====\n',
    'verifier/ctrf.json': { results: { tool: { name: 'pytest' }, summary: { tests: 4, passed: 3, failed: 1 } } },
    'artifacts/manifest.json': [
      { source: '/logs/app.log', destination: 'artifacts/logs/app.log', type: 'file', status: 'ok' },
      { source: '/out', destination: 'artifacts/out', type: 'directory', status: 'ok' },
    ],
    'artifacts/logs/app.log': 'app log line 1\napp log line 2\n',
    'artifacts/out/report.json': { ok: true, score: 0.75 },
  });
  cpSync(path.join(CLAUDE_CODE, 'agent', 'trajectory.json'), path.join(dir, 'agent', 'trajectory.json'));
  return new Map([
    ['agent/claude-code.txt', { role: 'agent_log', declared_by: [] }],
    ['agent/trajectory.json', { role: 'trajectory', declared_by: [] }],
    ['artifacts/logs/app.log', { role: 'artifact', declared_by: ['artifacts/manifest.json'] }],
    ['artifacts/manifest.json', { role: 'artifact', declared_by: [] }],
    ['artifacts/out/report.json', { role: 'artifact', declared_by: ['config.json'] }],
    ['config.json', { role: 'config', declared_by: [] }],
    ['lock.json', { role: 'lock', declared_by: [] }],
    ['result.json', { role: 'result', declared_by: [] }],
    ['trial.log', { role: 'other', declared_by: [] }],
    ['verifier/ctrf.json', { role: 'verifier_output', declared_by: [] }],
    ['verifier/test-stdout.txt', { role: 'verifier_output', declared_by: [] }],
  ]);
}

/** Copies a shared fixture's `agent/` (the trajectory and its sibling files) into `dir/agent/`. */
export function copyFixtureAgent(fixture: string, dir: string): string[] {
  mkdirSync(path.join(dir, 'agent'), { recursive: true });
  cpSync(path.join(fixture, 'agent'), path.join(dir, 'agent'), { recursive: true });
  return readdirSync(path.join(fixture, 'agent')).sort().map((n) => `agent/${n}`);
}

