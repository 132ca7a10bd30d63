/**
 * What do spans cost, and does a run with 1,000,000 of them stay readable?
 *
 *   npm run bench:spans            (the release addon and dist/ that `npm ci` builds)
 *   npm run bench:spans -- --spans 200000
 *
 * 1. ns per span on the JS thread (start + end, writer thread running), median and p90
 *    over batches of 10,000: `startSpan`/`end` alone, with an ambient parent, `span(fn)`,
 *    keyed, with attributes, and an async `await span(…)` (an empty async function
 *    subtracted); beside them OpenTelemetry's tracer (BasicTracerProvider with a
 *    BatchSpanProcessor and a no-op exporter, AsyncLocalStorage context), what a
 *    TypeScript user would otherwise pick.
 * 2. A run of 1,000,000 spans (200,000 rollout trees of 5 spans: rollout → 2 turns → a
 *    tool call each, 100 rollouts a step): write rate, close + compaction, size on disk.
 * 3. Read surfaces on it, each in a fresh process (best of 3, peak RSS): span counts
 *    per kind, one step's spans, one rollout tree, a label query, the first 200 rollouts,
 *    and every span as records; the live layout (parts, deduplicated on read) too.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { Recorder, RunReader } from '../dist/index.js';
import type { Span } from '../dist/index.js';

const HERE = fileURLToPath(import.meta.url);

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

function peakRssMiB(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : process.resourceUsage().maxRSS / 1024;
}

function dirBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return n;
}

// ---------------------------------------------------------------- read surfaces (child)

const SURFACES: Record<string, (r: RunReader, probe: { step: number; root: string; sample: string }) => string> = {
  'span counts per kind (probe info)': (r) => r.spanCounts().map((c) => `${c.kind} ${c.spans}`).join(', '),
  "one step's spans (500)": (r, p) => `${r.spans({ step: p.step }).length} spans`,
  'one rollout tree (spanTree)': (r, p) => {
    let n = 0;
    const walk = (x: { children: unknown[] }) => {
      n++;
      (x.children as Array<{ children: unknown[] }>).forEach(walk);
    };
    walk(r.spanTree(p.root)!);
    return `${n} spans`;
  },
  'label query (sample=…, every row scanned)': (r, p) => `${r.spans({ label: { sample: p.sample } }).length} spans`,
  'first 200 rollouts': (r) => `${r.spans({ kind: 'rollout', limit: 200 }).length} spans`,
  'every span as a record': (r) => `${r.spans().length} spans`,
};

function readChild(dir: string, surface: string, probe: string): void {
  const p = JSON.parse(probe) as { step: number; root: string; sample: string };
  const times: number[] = [];
  let detail = '';
  let rss = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const reader = RunReader.open(dir);
    detail = SURFACES[surface](reader, p);
    times.push(performance.now() - t0);
    if (i === 0) rss = peakRssMiB();
  }
  process.stdout.write(JSON.stringify({ ms: Math.min(...times), rss, detail }));
}

function timeSurfaces(dir: string, probe: { step: number; root: string; sample: string }, only?: string[]): void {
  for (const surface of Object.keys(SURFACES)) {
    if (only && !only.includes(surface)) continue;
    const r = spawnSync(process.execPath, [...process.execArgv, HERE, '--read', dir, surface, JSON.stringify(probe)], { encoding: 'utf8', maxBuffer: 1 << 26 });
    if (r.status !== 0) {
      console.log(`  ${surface}: failed\n${r.stderr}`);
      continue;
    }
    const out = JSON.parse(r.stdout) as { ms: number; rss: number; detail: string };
    console.log(`  ${surface.padEnd(44)} ${out.ms.toFixed(1).padStart(8)} ms   peak RSS ${out.rss.toFixed(0).padStart(5)} MiB   (${out.detail})`);
  }
}

// ---------------------------------------------------------------- 1. cost per span

const BATCH = 10_000;
const BATCHES = 25;

function measure(label: string, run: (n: number) => void, baseline = 0): number {
  run(BATCH); // warm-up
  const ns: number[] = [];
  for (let b = 0; b < BATCHES; b++) {
    const t0 = performance.now();
    run(BATCH);
    ns.push(((performance.now() - t0) * 1e6) / BATCH - baseline);
  }
  const med = quantile(ns, 0.5);
  console.log(`  ${label.padEnd(58)} median ${med.toFixed(0).padStart(5)} ns   p90 ${quantile(ns, 0.9).toFixed(0).padStart(5)} ns`);
  return med;
}

async function measureAsync(label: string, run: (n: number) => Promise<void>, baseline = 0): Promise<number> {
  await run(BATCH);
  const ns: number[] = [];
  for (let b = 0; b < BATCHES; b++) {
    const t0 = performance.now();
    await run(BATCH);
    ns.push(((performance.now() - t0) * 1e6) / BATCH - baseline);
  }
  const med = quantile(ns, 0.5);
  console.log(`  ${label.padEnd(58)} median ${med.toFixed(0).padStart(5)} ns   p90 ${quantile(ns, 0.9).toFixed(0).padStart(5)} ns`);
  return med;
}

async function otelCosts(): Promise<void> {
  let otel: {
    api: typeof import('@opentelemetry/api');
    base: typeof import('@opentelemetry/sdk-trace-base');
    hooks: typeof import('@opentelemetry/context-async-hooks');
  };
  try {
    otel = {
      api: await import('@opentelemetry/api'),
      base: await import('@opentelemetry/sdk-trace-base'),
      hooks: await import('@opentelemetry/context-async-hooks'),
    };
  } catch {
    console.log('  (OpenTelemetry not installed: npm install -D @opentelemetry/sdk-trace-base @opentelemetry/context-async-hooks)');
    return;
  }
  const { api, base, hooks } = otel;
  api.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  // export into nothing: only the SDK's own cost is measured
  const exporter = { export: (_s: unknown, done: (r: { code: number }) => void) => done({ code: 0 }), shutdown: async () => {} };
  // the processor's defaults, as a user would have them (it drops spans past a queue of 2,048)
  const provider = new base.BasicTracerProvider({ spanProcessors: [new base.BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer('bench');
  measure('OpenTelemetry tracer.startSpan + end', (n) => {
    for (let i = 0; i < n; i++) tracer.startSpan('turn').end();
  });
  measure('OpenTelemetry startActiveSpan(fn) (ambient parent for children)', (n) => {
    for (let i = 0; i < n; i++) tracer.startActiveSpan('turn', (s) => s.end());
  });
  await provider.shutdown();
  api.context.disable();
}

async function spanCosts(dir: string): Promise<void> {
  const rec = new Recorder(dir, { installHandlers: false, captureEnvironment: false, runId: 'bench' });
  const noop = () => 0;
  console.log('1. JS-thread cost of one span (start + end), writer thread running');
  const base = measure('(a plain function call, for scale)', (n) => {
    for (let i = 0; i < n; i++) noop();
  });
  void base;
  measure('rlprobe startSpan + end', (n) => {
    for (let i = 0; i < n; i++) rec.startSpan('turn', 'turn').end();
  });
  rec.span('rollout', 'outer', () => {
    measure('rlprobe startSpan + end, ambient parent (inside span(…))', (n) => {
      for (let i = 0; i < n; i++) rec.startSpan('tool_call', 'search').end();
    });
    measure('rlprobe span(kind, name, fn) (becomes ambient for fn)', (n) => {
      for (let i = 0; i < n; i++) rec.span('tool_call', 'search', noop);
    });
  });
  rec.unit({ step: 3, sample: 's-1', group: 'g-1' }, () => {
    measure('rlprobe span(…) inside a unit (step + labels)', (n) => {
      for (let i = 0; i < n; i++) rec.span('turn', 'turn', noop);
    });
  });
  let k = 0;
  measure('rlprobe startSpan({ key }) + end (id = FNV-1a of run + key)', (n) => {
    for (let i = 0; i < n; i++) rec.startSpan('rollout', 'r', { key: `sample-${k++}` }).end();
  });
  measure('rlprobe startSpan + 3 attributes + end', (n) => {
    for (let i = 0; i < n; i++) {
      const s: Span = rec.startSpan('tool_call', 'search');
      s.setAttribute('tool', 'search').setAttribute('tokens', i).setAttribute('ok', true);
      s.end();
    }
  });
  const emptyAsync = async () => {};
  const asyncBase = await measureAsync('(await an empty async function, for scale)', async (n) => {
    for (let i = 0; i < n; i++) await emptyAsync();
  });
  await measureAsync('rlprobe await span(kind, name, async fn), the await subtracted', async (n) => {
    for (let i = 0; i < n; i++) await rec.span('tool_call', 'search', emptyAsync);
  }, asyncBase);
  const s = rec.close();
  console.log(`  written: ${s.counters.spansWritten.toLocaleString('en-US')} spans, dropped ${s.counters.spansDropped}`);
  await otelCosts();
}

// ---------------------------------------------------------------- 2. a run of many spans

async function scaleRun(dir: string, total: number): Promise<void> {
  const perStep = 100;
  const rollouts = Math.ceil(total / 5);
  console.log(`\n2. A run of ${(rollouts * 5).toLocaleString('en-US')} spans (${rollouts.toLocaleString('en-US')} rollout trees of 5, ${perStep} a step)`);
  const rec = new Recorder(dir, { installHandlers: false, captureEnvironment: false, runId: 'bench-scale' });
  const t0 = performance.now();
  let js = 0;
  for (let r = 0; r < rollouts; r++) {
    const step = Math.floor(r / perStep);
    const a = performance.now();
    rec.unit({ step, sample: `s${step}-${r % perStep}`, group: `g${step}-${(r % perStep) >> 3}` }, () => {
      const rollout = rec.startSpan('rollout', 'rollout', { attributes: { reward: (r % 7) / 7 } });
      for (let t = 0; t < 2; t++) {
        const turn = rec.startSpan('turn', `turn ${t}`, { parent: rollout });
        rec.startSpan('tool_call', 'python', { parent: turn, attributes: { exit_code: 0 } }).end();
        turn.end();
      }
      rollout.end();
    });
    js += performance.now() - a;
    if (r % perStep === perStep - 1) rec.logStep({ step, loss: 1 });
  }
  const writeS = (performance.now() - t0) / 1000;
  const probe = { step: Math.floor(rollouts / perStep / 2), root: '', sample: `s${Math.floor(rollouts / perStep / 3)}-7` };
  // the live layout: parts not yet compacted, the same span written once
  rec.flushSync(60_000);
  probe.root = RunReader.open(dir).spans({ step: probe.step, kind: 'rollout', limit: 1 })[0].span_id;
  console.log(`  recorded in ${writeS.toFixed(1)} s: ${((rollouts * 5) / writeS).toFixed(0)} spans/s, ${((js * 1e6) / (rollouts * 5)).toFixed(0)} ns per span on the JS thread (unit + 5 spans with attributes, amortised)`);
  console.log('  live layout (part files, deduplicated on read):');
  timeSurfaces(dir, probe, ["one step's spans (500)", 'span counts per kind (probe info)']);
  const beforeClose = peakRssMiB();
  const c0 = performance.now();
  const s = rec.close();
  const closeS = (performance.now() - c0) / 1000;
  const spansDir = path.join(dir, 'spans');
  console.log(
    `  close + compaction ${closeS.toFixed(1)} s (${s.compaction?.spanPartsMerged} span parts → ${s.compaction?.spanRows.toLocaleString('en-US')} spans); ` +
      `spans/ ${(dirBytes(spansDir) / 2 ** 20).toFixed(1)} MiB on disk; dropped ${s.counters.spansDropped}; peak RSS of the writing process ${beforeClose.toFixed(0)} MiB while recording, ${peakRssMiB().toFixed(0)} MiB after close (compaction)`,
  );
  console.log('  compacted (spans/spans.parquet), each surface in a fresh process, best of 3:');
  timeSurfaces(dir, probe);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--read') {
    readChild(argv[1], argv[2], argv[3]);
    return;
  }
  if (argv[0] === '--scale') {
    // a process of its own, so its peak RSS is the run's alone
    await scaleRun(argv[1], Number(argv[2]));
    return;
  }
  const at = argv.indexOf('--spans');
  const total = at >= 0 ? Number(argv[at + 1]) : 1_000_000;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-bench-spans-'));
  try {
    await spanCosts(path.join(tmp, 'costs'));
    const r = spawnSync(process.execPath, [...process.execArgv, HERE, '--scale', path.join(tmp, 'scale'), String(total)], { stdio: 'inherit' });
    if (r.status !== 0) process.exitCode = 1;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
