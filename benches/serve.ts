/**
 * `probe serve`, the figures a user keeping it open all day cares about, measured with the
 * server in its own process (`node dist/cli/bin.js serve`) and the page in Chromium:
 *
 *   npx tsc -p tsconfig.build.json && npx tsc -p tsconfig.types.json   (the server runs from dist/)
 *   npm run bench:serve                      (all three parts)
 *   npm run bench:serve -- --only latency    (or fleet, or big)
 *   npm run bench:serve -- --big-run DIR     (a 1,000,000-step run already recorded, e.g. by probe scale-bench)
 *
 * 1. latency: a child records a run, publishing 20 steps every 500 ms and printing when
 *    (Date.now() after flushSync); the page shows the run; for each published part, the
 *    time until the page's chart holds its rows (window.__rlprobeServe.updates). Median,
 *    p95 and worst over `--parts` parts. Same machine, same clock.
 * 2. fleet: 100 runs of 10,000 steps (47 step columns, a sample a step), written once to
 *    a cache folder. Server RSS once every run is listed and diagnosed (and its peak while
 *    diagnosing), then with a page overlaying 10 of them; the page's load time.
 * 3. big: one run of 1,000,000 steps. Server RSS after its diagnosis, peak; page load time
 *    from navigation to every chart drawn, and to the findings listed; RSS after.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';

import { writeScaleRun } from '../dist/bench/scale.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'dist', 'cli', 'bin.js');
const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

function option(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}
const only = option('--only');
const parts = Number(option('--parts') ?? 30);
const cacheDir = option('--cache') ?? path.join(os.tmpdir(), 'rlprobe-serve-bench');

function quantile(values: number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

/** VmRSS and VmHWM of a process, MiB. */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

const mib = (m: { rss: number; hwm: number }) => `RSS ${m.rss.toFixed(0)} MiB (peak ${m.hwm.toFixed(0)} MiB)`;

interface Server {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

async function startServer(root: string, extra: string[] = []): Promise<Server> {
  const child = spawn(process.execPath, [BIN, 'serve', root, '--port', '0', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (t: string) => {
      stderr += t;
      const m = /at (http:\/\/\S+\/)\n/.exec(stderr);
      if (m) resolve(m[1]);
    });
    child.on('exit', () => reject(new Error(`probe serve exited:\n${stderr}`)));
  });
  return {
    child,
    url,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      await exited;
    },
  };
}

async function api(url: string, p: string): Promise<any> {
  const res = await fetch(new URL(p, url));
  if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Waits until every run is listed and none is waiting for its diagnosis. */
async function diagnosed(url: string, runs: number, timeoutMs = 600_000): Promise<any[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const list = (await api(url, '/api/runs')).runs as any[];
    if (list.length >= runs && list.every((r) => r.diagnosis === 'done' || r.diagnosis === 'failed')) return list;
    if (Date.now() > until) throw new Error(`not diagnosed in time: ${JSON.stringify(list.map((r) => r.diagnosis))}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function browser(): Promise<BrowserContext> {
  if (!CHROMIUM) throw new Error('Chromium is needed (apt-get install chromium, or CHROMIUM_PATH)');
  return chromium.launchPersistentContext(mkdtempSync(path.join(os.tmpdir(), 'rlprobe-serve-bench-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Opens the page on `keys` and times: every chart drawn, then the findings listed. */
async function loadPage(page: Page, url: string, keys: string[]): Promise<{ chartsMs: number; findingsMs: number; charts: number }> {
  const t0 = performance.now();
  await page.goto(`${url}#runs=${keys.join(',')}&tab=charts`);
  await page.waitForFunction(() => (window as any).__rlprobeServe?.ready === true && document.querySelectorAll('figure[data-chart]').length > 0 && Array.from(document.querySelectorAll("figure[data-chart]")).every((f) => f.hasAttribute("data-rendered")), undefined, { timeout: 300_000, polling: 50 });
  const chartsMs = performance.now() - t0;
  await page.waitForFunction(() => document.querySelectorAll('.findings .finding').length > 0, undefined, { timeout: 300_000, polling: 50 }).catch(() => undefined);
  const findingsMs = performance.now() - t0;
  const charts = await page.locator('figure[data-chart]').count();
  return { chartsMs, findingsMs, charts };
}

async function latency(ctx: () => Promise<BrowserContext>): Promise<void> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-serve-latency-'));
  const server = await startServer(root);
  const runDir = path.join(root, 'live');
  const writer = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test', 'children', 'serve-live-writer.ts'), runDir, String((parts + 20) * 20), '--chunk', '20', '--pause', '500', '--hang'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const published: Array<{ rows: number; at: number }> = [];
  let out = '';
  writer.stdout!.setEncoding('utf8');
  writer.stdout!.on('data', (t: string) => {
    out += t;
    for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
      const m = /^flushed (\d+) (\d+)$/.exec(out.slice(0, nl));
      out = out.slice(nl + 1);
      if (m) published.push({ rows: Number(m[1]), at: Number(m[2]) });
    }
  });
  try {
    let key: string | undefined;
    while (!key) {
      key = (await api(server.url, '/api/runs')).runs[0]?.key;
      await new Promise((r) => setTimeout(r, 100));
    }
    const page = await (await ctx()).newPage();
    await page.goto(`${server.url}#runs=${key}&tab=charts`);
    await page.waitForFunction(() => (window as any).__rlprobeServe?.ready === true, undefined, { timeout: 60_000 });
    const from = published.length;
    while (published.length < from + parts) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 3000));
    const updates = (await page.evaluate(() => (window as any).__rlprobeServe.updates)) as Array<{ rows: number; at: number; sentAt?: number }>;
    const lags: number[] = [];
    const serverLags: number[] = [];
    for (const p of published.slice(from, from + parts)) {
      const u = updates.find((x) => x.rows >= p.rows && x.at >= p.at);
      if (!u) throw new Error(`no chart update holds ${p.rows} rows`);
      lags.push(u.at - p.at);
      if (u.sentAt) serverLags.push(u.sentAt - p.at);
    }
    console.log(`published part → chart updated (${lags.length} parts of 20 steps, server polling every 500 ms): median ${quantile(lags, 0.5)} ms, p95 ${quantile(lags, 0.95)} ms, worst ${Math.max(...lags)} ms`);
    if (serverLags.length) console.log(`  of which published → delta sent by the server: median ${quantile(serverLags, 0.5)} ms, p95 ${quantile(serverLags, 0.95)} ms`);
    console.log(`  server while following it: ${mib(memory(server.child.pid!))}`);
    await page.close();
  } finally {
    writer.kill('SIGKILL');
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

async function fleet(ctx: () => Promise<BrowserContext>): Promise<void> {
  const root = path.join(cacheDir, 'fleet-100x10k');
  if (!existsSync(path.join(root, 'run-099', 'steps.parquet'))) {
    console.log(`writing 100 runs of 10,000 steps into ${root} (kept for the next run of this bench)…`);
    mkdirSync(root, { recursive: true });
    for (let i = 0; i < 100; i++) writeScaleRun(path.join(root, `run-${String(i).padStart(3, '0')}`), 10_000, 1, () => undefined);
  }
  const t0 = performance.now();
  const server = await startServer(root);
  try {
    const runs = await diagnosed(server.url, 100);
    const readyMs = performance.now() - t0;
    console.log(`100 runs of 10,000 steps: listed and diagnosed ${(readyMs / 1000).toFixed(1)} s after start; server ${mib(memory(server.child.pid!))}`);
    const page = await (await ctx()).newPage();
    const keys = runs.slice(0, 10).map((r) => r.key);
    const load = await loadPage(page, server.url, keys);
    console.log(`  page overlaying 10 of them: ${load.charts} charts drawn in ${load.chartsMs.toFixed(0)} ms; server ${mib(memory(server.child.pid!))}`);
    await page.close();
  } finally {
    await server.stop();
  }
}

async function big(ctx: () => Promise<BrowserContext>): Promise<void> {
  let dir = option('--big-run');
  if (!dir) {
    dir = path.join(cacheDir, 'big-1m');
    if (!existsSync(path.join(dir, 'steps.parquet'))) {
      console.log(`writing a 1,000,000-step run into ${dir} (kept for the next run of this bench)…`);
      writeScaleRun(dir, 1_000_000, 1, () => undefined);
    }
  }
  const t0 = performance.now();
  const server = await startServer(dir);
  try {
    const listed = (await api(server.url, '/api/runs')).runs;
    const listedMs = performance.now() - t0;
    const before = memory(server.child.pid!);
    const runs = await diagnosed(server.url, 1);
    const readyMs = performance.now() - t0;
    console.log(`1 run of ${runs[0].rows.toLocaleString('en')} steps: listed ${listedMs.toFixed(0)} ms after start (server RSS ${before.rss.toFixed(0)} MiB), diagnosed after ${(readyMs / 1000).toFixed(1)} s; server ${mib(memory(server.child.pid!))}`);
    const page = await (await ctx()).newPage();
    const load = await loadPage(page, server.url, [listed[0].key]);
    console.log(`  page load: ${load.charts} charts drawn ${load.chartsMs.toFixed(0)} ms after navigation, findings listed at ${load.findingsMs.toFixed(0)} ms; server ${mib(memory(server.child.pid!))}`);
    await page.close();
    const page2 = await (await ctx()).newPage();
    const again = await loadPage(page2, server.url, [listed[0].key]);
    console.log(`  page load again (charts held by the server): ${again.chartsMs.toFixed(0)} ms; server ${mib(memory(server.child.pid!))}`);
    await page2.close();
  } finally {
    await server.stop();
  }
}

// launched when a part first needs a page: Chromium starting takes the CPU a server start-up is timed on
let launched = null as Promise<BrowserContext> | null;
const ctx = () => (launched ??= browser());
try {
  console.log(`probe serve bench, ${new Date().toISOString()}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  if (!only || only === 'latency') await latency(ctx);
  if (!only || only === 'fleet') await fleet(ctx);
  if (!only || only === 'big') await big(ctx);
} finally {
  await (await launched)?.close();
}
