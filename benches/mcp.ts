/**
 * `probe mcp` on a large run: how long the server takes to start, how long diagnose and
 * span_tree take on a 100,000-step run with 100,000 spans, and the largest answer seen.
 *
 *   npx tsc -p tsconfig.build.json && npx tsc -p tsconfig.types.json   (the server runs from dist/)
 *   npm run bench:mcp
 *   npm run bench:mcp -- --steps 20000 --calls 5
 *
 * 1. Records the run through the Recorder: `steps` steps of GRPO-like metrics (entropy
 *    collapsing from 70 % of the way, so the doctor has a finding), and a rollout every 5
 *    steps — rollout → 2 turns → a tool call each, 5 spans — with its sample logged inside,
 *    so `steps` spans in all; closed (compacted).
 * 2. Start-up: spawn `node dist/cli/bin.js mcp --root <dir>` until the SDK client's
 *    initialize handshake is done, median of 5.
 * 3. Every tool called once (resources read too), then diagnose and span_tree `calls` times
 *    each: median and worst latency, as the client sees it. The largest answer (text plus
 *    structured content) of all calls, against the byte budget.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { prng } from '../dist/bench/scale.js';
import { Recorder } from '../dist/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'dist', 'cli', 'bin.js');
const BUDGET = 32 * 1024;

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

const STEPS = option('--steps', 100_000);
const CALLS = option('--calls', 7);
const ROLLOUT_EVERY = 5;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function recordRun(dir: string): { seconds: number; spans: number; sampleId: string; rolloutStep: number } {
  const t0 = performance.now();
  const u = prng(7);
  // a queue that holds a burst, and a flush every 10,000 steps: a tight loop must not drop steps
  const rec = new Recorder(dir, { installHandlers: false, captureEnvironment: false, runId: 'mcp-bench', algorithm: 'grpo', modelName: 'bench-model', queueCapacity: 1 << 17 });
  const collapse = Math.floor(STEPS * 0.7);
  let spans = 0;
  for (let step = 0; step < STEPS; step++) {
    const x = step / STEPS;
    const entropy = 0.8 * (step < collapse ? 1 - 0.2 * x : 0.03 + 0.97 * Math.exp(-(step - collapse) / 12));
    if (step % 10_000 === 0 && !rec.flushSync(60_000)) throw new Error(`flushSync timed out at step ${step}`);
    rec.logStep({ step, loss: 0.01 * (u() - 0.5), reward_mean: 0.3 + 0.3 * x + 0.03 * u(), reward_std: 0.25, kl_mean: 0.002 + 0.04 * Math.sqrt(x), entropy_mean: entropy, grad_norm: 0.4 + 0.1 * u(), lr: 1e-6, clip_fraction: 0.08 + 0.02 * u() });
    if (step % ROLLOUT_EVERY !== 0) continue;
    rec.unit({ step, sample: `s${step}`, group: `g${step}` }, () =>
      rec.span('rollout', `rollout ${step}`, (r) => {
        for (let t = 0; t < 2; t++) {
          rec.span('turn', `turn ${t}`, (turn) => {
            turn.setAttribute('message', `turn ${t} of the rollout at step ${step}: ${'thinking '.repeat(20)}`);
            rec.span('tool_call', t ? 'bash' : 'read_file', (call) => call.setAttributes({ arguments: `{"path":"src/${step}.py"}`, result: `contents of src/${step}.py `.repeat(10) }));
          });
        }
        r.setAttribute('reward', u());
        rec.logSamples([{ sample_id: `s${step}`, prompt_text: `task ${step}`, completion_text: `answer ${step} `.repeat(30), reward_total: u(), completion_len: 200 }], { step, select: false });
      }),
    );
    spans += 5;
  }
  const { counters } = rec.close();
  if (counters.written !== STEPS || counters.samplesWritten !== STEPS / ROLLOUT_EVERY) {
    throw new Error(`the run is not the one described: ${counters.written} of ${STEPS} steps and ${counters.samplesWritten} samples written (${counters.dropped} steps, ${counters.samplesDropped} samples dropped)`);
  }
  const rolloutStep = Math.floor(STEPS / 2 / ROLLOUT_EVERY) * ROLLOUT_EVERY;
  return { seconds: (performance.now() - t0) / 1000, spans, sampleId: `s${rolloutStep}`, rolloutStep };
}

async function connect(root: string): Promise<{ client: Client; ms: number }> {
  const t0 = performance.now();
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', '--root', root], cwd: root, env: process.env as Record<string, string>, stderr: 'ignore' });
  const client = new Client({ name: 'rlprobe-bench', version: '0.0.0' });
  await client.connect(transport);
  return { client, ms: performance.now() - t0 };
}

function answerBytes(r: CallToolResult): number {
  const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  return Buffer.byteLength(text) + (r.structuredContent === undefined ? 0 : Buffer.byteLength(JSON.stringify(r.structuredContent)));
}

async function main(): Promise<void> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-mcp-bench-'));
  try {
    const dir = path.join(base, 'run');
    console.log(`recording ${STEPS.toLocaleString('en')} steps with a rollout (5 spans, 1 sample) every ${ROLLOUT_EVERY} steps …`);
    const rec = recordRun(dir);
    console.log(`  ${rec.spans.toLocaleString('en')} spans, recorded and closed in ${rec.seconds.toFixed(1)} s`);

    const starts: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { client, ms } = await connect(base);
      starts.push(ms);
      await client.close();
    }
    console.log(`\nstart-up (spawn → initialize done), 5 starts: median ${median(starts).toFixed(0)} ms (${starts.map((s) => s.toFixed(0)).join(', ')})`);

    const { client } = await connect(base);
    await client.listTools();
    let largest = { bytes: 0, what: '' };
    const call = async (name: string, args: Record<string, unknown>): Promise<{ ms: number; result: CallToolResult }> => {
      const t0 = performance.now();
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      const ms = performance.now() - t0;
      if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
      const bytes = answerBytes(result);
      if (bytes > largest.bytes) largest = { bytes, what: name };
      return { ms, result };
    };
    const tree = (await call('span_tree', { run: 'run', sample_id: rec.sampleId })).result.structuredContent as { span_id: string };
    const firstCalls: Array<[string, Record<string, unknown>]> = [
      ['list_runs', {}],
      ['run_info', { run: 'run' }],
      ['diagnose', { run: 'run' }],
      ['series', { run: 'run', metrics: ['entropy_mean', 'reward_mean', 'kl_mean'], points: 500 }],
      ['samples', { run: 'run', from_step: rec.rolloutStep, text_chars: 20_000 }],
      ['sample', { run: 'run', sample_id: rec.sampleId }],
      ['span_tree', { run: 'run', span_id: tree.span_id, text_chars: 4000 }],
      ['trials', { run: 'run' }],
      ['diff', { run_a: 'run', run_b: 'run' }],
    ];
    console.log(`\nevery tool once (the first call of each):`);
    for (const [name, args] of firstCalls) {
      const { ms, result } = await call(name, args);
      console.log(`  ${name.padEnd(10)} ${ms.toFixed(0).padStart(6)} ms  ${answerBytes(result).toLocaleString('en').padStart(7)} bytes${(result.structuredContent as { next_cursor?: unknown })?.next_cursor ? ' (more pages)' : ''}`);
      if (name === 'run_info') {
        // what the server read back, so the figures are known to be of the run described
        const info = result.structuredContent as { summary: { steps: number; findings: unknown }; counts: { spans: number; samples: number } };
        console.log(`             (read back: ${info.summary.steps.toLocaleString('en')} steps, ${info.counts.spans.toLocaleString('en')} spans, ${info.counts.samples.toLocaleString('en')} samples, findings ${JSON.stringify(info.summary.findings)})`);
      }
    }
    for (const uri of ['rlprobe://run/run/manifest.json', 'rlprobe://run/run/findings.json', 'rlprobe://run/run/report.md']) {
      const t0 = performance.now();
      const r = await client.readResource({ uri });
      const bytes = Buffer.byteLength((r.contents[0] as { text: string }).text);
      console.log(`  ${uri.padEnd(34)} ${(performance.now() - t0).toFixed(0).padStart(6)} ms  ${bytes.toLocaleString('en').padStart(7)} bytes`);
      if (bytes > largest.bytes) largest = { bytes, what: uri };
    }
    console.log(`\nlatency over ${CALLS} calls each (as the client sees it):`);
    for (const [name, args] of [['diagnose', { run: 'run' }], ['span_tree', { run: 'run', span_id: tree.span_id }], ['span_tree', { run: 'run', sample_id: rec.sampleId }]] as const) {
      const times: number[] = [];
      for (let i = 0; i < CALLS; i++) times.push((await call(name, args)).ms);
      console.log(`  ${`${name} ${Object.keys(args).filter((k) => k !== 'run').join(', ')}`.padEnd(24)} median ${median(times).toFixed(0).padStart(5)} ms   worst ${Math.max(...times).toFixed(0).padStart(5)} ms`);
    }
    console.log(`\nlargest answer: ${largest.bytes.toLocaleString('en')} bytes (${largest.what}); budget ${BUDGET.toLocaleString('en')} bytes`);
    await client.close();
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

await main();
