/// <reference lib="dom" />
/**
 * `probe serve` in a real browser: the dashboard served in-process over a folder of runs
 * (test/helpers/serve-runs.ts) and over a folder a child records into while the page is
 * open (test/children/serve-live-writer.ts), driven in headless Chromium (Debian's
 * `chromium`, through playwright-core; `.ci/run` installs it). The run list and its
 * filters, live growth without a reload, several runs overlaid, the drill-down from a
 * finding and a sample to a trial and a span, a hostile run's names and texts kept inert,
 * the samples browser's filters and the diff. Every test: no console error, no page
 * error, no dialog, no Content-Security-Policy violation, no request off the server's
 * origin. Screenshots land in test-output/ (a CI artifact). Without Chromium the suite is
 * skipped locally and fails under CI=true.
 */
import assert from 'node:assert/strict';
import { mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { BrowserContext, Page } from 'playwright-core';

import { Recorder } from '../ts/index.js';
import { findingsOf, entryOf, listRuns, listSamples, runDiff } from '../ts/serve/api.js';
import { startServe } from '../ts/serve/server.js';
import type { Serving } from '../ts/serve/server.js';
import { spawnChild, waitForExit } from './helpers/child.js';
import type { RunningChild } from './helpers/child.js';
import { chromiumSkip, launchChromium, watchPage } from './helpers/chromium.js';
import { ROOT, cleanupTempDirs, tempDir } from './helpers/fixtures.js';
import { HOSTILE_TEXT } from './helpers/report-runs.js';
import { HOSTILE_DIR, HOSTILE_ID, makeServeFleet } from './helpers/serve-runs.js';
import type { ServeFleet } from './helpers/serve-runs.js';
import { PASS_NAME } from './helpers/trial-fixtures.js';

const OUTPUT = path.join(ROOT, 'test-output');
const skip = chromiumSkip;

/** Waits in the page: generous, CI has 2 cores shared by Chromium, the server and a writer. */
const WAIT_MS = 60_000;

type Role = keyof ServeFleet['runs'];

let context: BrowserContext;
let fleet: ServeFleet;
let serving: Serving | null = null;
let liveServing: Serving | null = null;
let writer: RunningChild | null = null;
/** The fleet's run keys by role (the outside run has none: it is not served). */
const keys = {} as Record<Exclude<Role, 'outside'>, string>;

before(async () => {
  if (skip) return;
  fleet = await makeServeFleet();
  serving = await startServe({ roots: [fleet.root], port: 0, pollMs: 200, rescanMs: 1000 });
  // the server's own diagnoses of the fleet are done before any page looks
  await serving.ctx.diagnosis.idle();
  const byDir = new Map([...serving.ctx.index.entries.values()].map((e) => [e.dir, e.key]));
  for (const role of ['healthy', 'collapse', 'trial', 'hostile'] as const) {
    const key = byDir.get(realpathSync(fleet.runs[role]));
    assert.ok(key, `the ${role} run is served: ${[...byDir.keys()].join(', ')}`);
    keys[role] = key;
  }
  mkdirSync(OUTPUT, { recursive: true });
  // not offline: that would block the server on localhost. Every request is checked to go to the server's origin instead.
  context = await launchChromium();
  context.setDefaultTimeout(WAIT_MS);
});
after(async () => {
  await context?.close();
  if (writer && writer.proc.exitCode === null && writer.proc.signalCode === null) {
    writer.proc.kill('SIGKILL');
    await waitForExit(writer);
  }
  await liveServing?.close();
  await serving?.close();
  cleanupTempDirs();
});

interface Opened {
  page: Page;
  origin: string;
  errors: string[];
  requests: string[];
  dialogs: string[];
}

async function open(server: Serving): Promise<Opened> {
  const page = await context.newPage();
  const { errors, requests, dialogs } = watchPage(page);
  // Content-Security-Policy violations, recorded from before the page's first script
  await page.addInitScript(() => {
    const w = window as unknown as { __csp: string[] };
    w.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));
  });
  await page.goto(server.url);
  await page.waitForSelector('body[data-runs]');
  return { page, origin: new URL(server.url).origin, errors, requests, dialogs };
}

/** What every test ends on: nothing went wrong on the page, and it only spoke to its server. */
async function assertClean(o: Opened): Promise<void> {
  assert.deepEqual(o.errors, []);
  assert.deepEqual(o.dialogs, []);
  assert.ok(o.requests.length > 0);
  assert.deepEqual(o.requests.filter((u) => !u.startsWith(`${o.origin}/`)), [], `requests off ${o.origin}`);
  assert.deepEqual(await o.page.evaluate(() => (window as unknown as { __csp: string[] }).__csp), []);
  assert.equal(await o.page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
}

const runRow = (page: Page, key: string) => page.locator(`.run[data-run="${key}"]`);

/** Ticks (or unticks) a run for charting. The list is re-rendered on every change: always through a locator. */
async function tick(page: Page, key: string, checked = true): Promise<void> {
  const box = runRow(page, key).locator('input[type=checkbox]');
  await box.click();
  await page.waitForFunction(
    ([k, c]) => (document.querySelector(`.run[data-run="${k}"] input[type=checkbox]`) as HTMLInputElement | null)?.checked === c && location.hash.includes(k) === c,
    [key, checked] as const,
  );
}

const shownRuns = async (page: Page) => Number(await page.getAttribute('body', 'data-shown-runs'));

/** Marks the charts drawn now, so a wait can tell them from the ones drawn next. */
function markStale(page: Page): Promise<void> {
  return page.evaluate(() => document.querySelectorAll('figure.chart').forEach((f) => f.setAttribute('data-stale', '1')));
}

/** Per chart canvas: pixels drawn opaquely in `rgb` (a run's line colour). */
function inked(page: Page, chart: string, rgb: [number, number, number]): Promise<number> {
  return page.evaluate(
    ([id, [r, g, b]]) => {
      const canvas = document.querySelector<HTMLCanvasElement>(`figure[data-chart="${id}"] canvas`);
      if (!canvas || canvas.width === 0) return 0;
      const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 0; i < px.length; i += 4) {
        if (px[i + 3] > 128 && Math.abs(px[i] - r) < 40 && Math.abs(px[i + 1] - g) < 40 && Math.abs(px[i + 2] - b) < 40) n++;
      }
      return n;
    },
    [chart, rgb] as const,
  );
}

const BLUE: [number, number, number] = [31, 119, 180];
const ORANGE: [number, number, number] = [255, 127, 14];

/** A number as the page writes it (ts/serve/client/format.js `num`). */
function shownNumber(v: number): string {
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

/** Runs a samples search in the page and waits for its answer. */
async function searchSamples(page: Page, fields: Record<string, string>): Promise<number> {
  const form = page.locator('form.samples');
  if (fields.run !== undefined) await form.locator('select[name=run]').selectOption(fields.run);
  for (const [name, value] of Object.entries(fields)) if (name !== 'run') await form.locator(`input[name=${name}]`).fill(value);
  // the search the tab opened with is answered first: the answer awaited below is the submit's
  await page.waitForSelector('.sample-results [data-count]');
  await Promise.all([page.waitForResponse((r) => r.url().includes('/samples?')), form.locator('button[type=submit]').click()]);
  const count = page.locator('.sample-results [data-count]');
  await count.waitFor();
  return Number(await count.getAttribute('data-count'));
}

describe('probe serve in Chromium', { skip }, () => {
  test('the run list shows every run of the folder with its status, and each filter narrows it', { timeout: 120_000 }, async () => {
    const o = await open(serving!);
    const { page } = o;
    const listing = listRuns(serving!.ctx) as { runs: Array<{ key: string; id: string; path: string; findings: { critical: number; warn: number } }>; not_searched_total: number };
    const expected = listing.runs;
    assert.equal(expected.length, 4, JSON.stringify(expected.map((r) => r.path)));
    assert.equal(await page.getAttribute('body', 'data-runs'), '4');
    assert.equal(await shownRuns(page), 4);
    const rows = await page.locator('.run').evaluateAll((rs) => rs.map((r) => ({ key: r.getAttribute('data-run'), status: r.getAttribute('data-status'), name: r.querySelector('.name')!.textContent, badge: r.querySelector('.badge')!.textContent })));
    assert.deepEqual(rows.map((r) => r.key).sort(), Object.values(keys).sort());
    for (const r of rows) {
      assert.equal(r.status, 'closed', JSON.stringify(r));
      assert.equal(r.badge, 'closed', JSON.stringify(r));
    }
    // the run behind the symbolic link out of the folder is not listed, nor the rank directory
    const listed = await page.locator('#runs').textContent();
    assert.ok(!listed!.includes('outside'), listed!);
    assert.ok(!listed!.includes('rank-001'), listed!);
    assert.deepEqual(rows.map((r) => r.name).sort(), ['a-healthy', 'b-collapse', 'trial-run', HOSTILE_ID].sort());
    // the link out of the folder is a folder not searched
    assert.equal(listing.not_searched_total, 1);
    assert.equal(await page.locator('.run-count').textContent(), '4 of 4 runs · 1 folder not searched');

    // by name or path
    const name = page.locator('[data-filter=name]');
    await name.fill('sweep');
    await page.waitForSelector('body[data-shown-runs="2"]');
    assert.deepEqual((await page.locator('.run').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-run')))).sort(), [keys.healthy, keys.collapse].sort());
    await name.fill('COLLAPSE');
    await page.waitForSelector('body[data-shown-runs="1"]');
    assert.equal(await page.locator('.run').getAttribute('data-run'), keys.collapse);
    await name.fill('');
    await page.waitForSelector('body[data-shown-runs="4"]');

    // by status: every run of the fleet is closed
    const status = page.locator('select[data-filter=status]');
    await status.selectOption('live');
    await page.waitForSelector('body[data-shown-runs="0"]');
    assert.match((await page.locator('.run-list').textContent())!, /No run matches the filters/);
    await status.selectOption('closed');
    await page.waitForSelector('body[data-shown-runs="4"]');
    await status.selectOption('');

    // by algorithm and model
    await page.locator('select[data-filter=algorithm]').selectOption('ppo');
    await page.waitForSelector('body[data-shown-runs="1"]');
    await page.locator('select[data-filter=algorithm]').selectOption('');
    await page.locator('select[data-filter=model]').selectOption('qwen-0.5b');
    await page.waitForSelector('body[data-shown-runs="1"]');
    assert.equal(await page.locator('.run').getAttribute('data-run'), keys.healthy);
    await page.locator('select[data-filter=model]').selectOption('');
    await page.waitForSelector('body[data-shown-runs="4"]');

    // has a finding (warn or worse): the collapse run, as the server counts it
    const withFinding = expected.filter((r) => r.findings.critical + r.findings.warn > 0).map((r) => r.key);
    assert.deepEqual(withFinding, [keys.collapse]);
    assert.equal(await runRow(page, keys.collapse).locator('.chip.critical').count(), 1);
    await page.locator('[data-filter=finding]').check();
    await page.waitForSelector(`body[data-shown-runs="${withFinding.length}"]`);
    assert.deepEqual(await page.locator('.run').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-run'))), withFinding);
    await page.screenshot({ path: path.join(OUTPUT, 'serve-runs.png') });
    await page.locator('[data-filter=finding]').uncheck();
    await page.waitForSelector('body[data-shown-runs="4"]');
    await assertClean(o);
    await page.close();
  });

  test('live: a run started after the page opened appears, its charts and findings grow without a reload, and killed it reads as ended without close', { timeout: 180_000 }, async () => {
    const liveRoot = tempDir('rlprobe-serve-live-');
    liveServing = await startServe({ roots: [liveRoot], port: 0, pollMs: 200, rescanMs: 300 });
    const o = await open(liveServing);
    const { page } = o;
    assert.equal(await page.getAttribute('body', 'data-runs'), '0');
    await page.waitForSelector('#conn.live');
    const url = page.url();
    await page.evaluate(() => ((window as unknown as { __marker: number }).__marker = 1));

    writer = spawnChild('serve-live-writer.ts', [path.join(liveRoot, 'sub', 'live'), '400', '--chunk', '20', '--pause', '400', '--collapse-at', '100', '--hang']);
    // the run appears in the list by itself
    await page.waitForSelector('body[data-runs="1"]', { timeout: 90_000 });
    const key = (await page.locator('.run').getAttribute('data-run'))!;
    assert.match(key, /^[0-9a-f]{16}$/);
    assert.equal(await page.locator('.run .name').textContent(), 'live-writer');
    await page.waitForSelector(`.run[data-run="${key}"][data-status="live"]`);
    await tick(page, key);

    // the entropy chart's last step grows, twice at least, from the stream
    const entropy = 'figure[data-chart="entropy"]';
    await page.waitForSelector(`${entropy}[data-last-step]:not([data-last-step=""])`, { timeout: 90_000 });
    const seen = [Number(await page.getAttribute(entropy, 'data-last-step'))];
    for (let i = 0; i < 2; i++) {
      const grew = await page.waitForFunction(
        ([sel, prev]) => {
          const v = Number(document.querySelector(sel)?.getAttribute('data-last-step') ?? NaN);
          return v > prev ? v : false;
        },
        [entropy, seen[seen.length - 1]] as const,
        { timeout: 90_000 },
      );
      seen.push(await grew.jsonValue() as number);
    }
    assert.ok(seen[2] > seen[1] && seen[1] > seen[0], `last steps seen: ${seen.join(' → ')}`);

    // the diagnosis finds the collapse; the finding is listed and marked on the entropy chart
    const finding = page.locator(`.findings .finding[data-code="ENTROPY_COLLAPSE"][data-run="${key}"]`);
    await finding.waitFor({ timeout: 120_000 });
    await page.waitForFunction((sel) => Number(document.querySelector(sel)?.getAttribute('data-marks')) > 0, entropy, { timeout: 30_000 });
    assert.match((await finding.textContent())!, /ENTROPY_COLLAPSE/);

    // all of it without a navigation: same URL, same document, updates as deltas
    assert.equal(page.url().split('#')[0], url.split('#')[0]);
    assert.equal(await page.evaluate(() => (window as unknown as { __marker?: number }).__marker), 1);
    const updates = await page.evaluate(() => (window as unknown as { __rlprobeServe: { updates: Array<{ run: string; rows: number; full?: boolean }> } }).__rlprobeServe.updates);
    const deltas = updates.filter((u) => u.run === key && !u.full);
    assert.ok(deltas.length >= 2, `chart updates: ${JSON.stringify(updates)}`);
    assert.ok(deltas[deltas.length - 1].rows > deltas[0].rows, JSON.stringify(deltas));

    // killed: the badge says so, still without a reload
    assert.equal(await runRow(page, key).getAttribute('data-status'), 'live');
    writer.proc.kill('SIGKILL');
    const exit = await waitForExit(writer);
    assert.equal(exit.signal, 'SIGKILL', writer.describe());
    await page.waitForSelector(`.run[data-run="${key}"][data-status="ended without close"]`, { timeout: 60_000 });
    assert.equal(await runRow(page, key).locator('.badge').textContent(), 'ended without close');
    assert.equal(await page.evaluate(() => (window as unknown as { __marker?: number }).__marker), 1);
    await page.screenshot({ path: path.join(OUTPUT, 'serve-live.png') });
    await assertClean(o);
    await page.close();
    await liveServing.close();
    liveServing = null;
  });

  test('overlay: two runs share each chart, a series and a legend entry per run; x mode, smoothing and log scale redraw', { timeout: 120_000 }, async () => {
    const o = await open(serving!);
    const { page } = o;
    await tick(page, keys.healthy);
    await tick(page, keys.collapse);
    const reward = 'figure[data-chart="reward"]';
    await page.waitForFunction((sel) => Number(document.querySelector(sel)?.getAttribute('data-series')) >= 2, reward);
    const legend = await page.locator(`${reward} .u-legend .u-series .u-label`).allTextContents();
    assert.ok(legend.some((l) => l.startsWith('a-healthy')), JSON.stringify(legend));
    assert.ok(legend.some((l) => l.startsWith('b-collapse')), JSON.stringify(legend));
    assert.ok(Number(await page.getAttribute(reward, 'data-points')) > 0);
    // each run's line drawn in its colour (the collapse's finding mark on reward is red)
    assert.ok((await inked(page, 'reward', BLUE)) > 100, 'a-healthy drawn');
    assert.ok((await inked(page, 'reward', ORANGE)) > 100, 'b-collapse drawn');
    // the collapse's finding: listed under the run's name, marked on the entropy chart
    await page.waitForSelector(`.findings .finding[data-code="ENTROPY_COLLAPSE"][data-run="${keys.collapse}"]`);
    assert.ok(Number(await page.getAttribute('figure[data-chart="entropy"]', 'data-marks')) > 0);
    // the healthy run's checkpoint at step 200 is drawn on every chart
    assert.equal(await page.getAttribute(reward, 'data-events'), '1');

    const redrawn = async (what: string, change: () => Promise<void>) => {
      await markStale(page);
      await change();
      await page.waitForSelector(`${reward}[data-rendered]:not([data-stale])`);
      assert.ok(Number(await page.getAttribute(reward, 'data-series')) >= 2, what);
      assert.ok(Number(await page.getAttribute(reward, 'data-points')) > 0, what);
      assert.equal(await page.locator('figure.chart[data-stale]').count(), 0, `${what}: every chart drawn again`);
      assert.deepEqual(o.errors, [], what);
    };
    await redrawn('x by wall time', () => page.locator('select[name=x]').selectOption('time').then(() => undefined));
    assert.match(page.url(), /x=time/);
    await redrawn('smoothing 0.6', () =>
      page.locator('input[name=ema]').evaluate((el) => {
        const input = el as HTMLInputElement;
        input.value = '0.6';
        input.dispatchEvent(new Event('change', { bubbles: true }));
      }),
    );
    assert.match(page.url(), /ema=0\.6/);
    await redrawn('log scale', () => page.locator('input[name=log]').check());
    assert.match(page.url(), /log=1/);
    // (the fleet's steps were logged within milliseconds: by time they pile up at a few x)
    await redrawn('x by step again', () => page.locator('select[name=x]').selectOption('step').then(() => undefined));
    assert.match(page.url(), /x=step&ema=0\.6&log=1/);
    assert.ok((await inked(page, 'reward', BLUE)) > 100, 'a-healthy drawn smoothed on a log scale');
    assert.ok((await inked(page, 'reward', ORANGE)) > 100, 'b-collapse drawn smoothed on a log scale');
    await page.screenshot({ path: path.join(OUTPUT, 'serve-overlay.png') });
    await assertClean(o);
    await page.close();
  });

  test('zoom: a step range zoomed into is fetched at full resolution, and a double-click brings the live points back', { timeout: 120_000 }, async () => {
    const o = await open(serving!);
    const { page } = o;
    await tick(page, keys.collapse);
    const entropy = 'figure[data-chart="entropy"]';
    await page.waitForSelector(`${entropy}[data-rendered]`);
    const live = Number(await page.getAttribute(entropy, 'data-points'));
    // a drag-select ends in setScale, as this does
    await page.evaluate(() => (window as any).__rlprobeServe.charts.charts.get('entropy').u.setScale('x', { min: 200, max: 240 }));
    await page.waitForSelector(`${entropy}[data-zoomed="200..240"]`);
    // every step of 200..240, each once: the rows the server read for the range, between the live points around it
    // (not around the finding's flag at its onset, 120: a click there opens the finding)
    assert.equal(await page.getAttribute(entropy, 'data-zoom-points'), '41');
    const xs = (await page.evaluate(() => (window as any).__rlprobeServe.charts.charts.get('entropy').u.data[0])) as number[];
    assert.deepEqual(xs.filter((x) => x >= 200 && x <= 240), Array.from({ length: 41 }, (_, i) => 200 + i));
    await page.locator(`${entropy} .u-over`).dblclick();
    await page.waitForSelector(`${entropy}:not([data-zoomed])`);
    const back = (await page.evaluate(() => (window as any).__rlprobeServe.charts.charts.get('entropy').u.data[0].length)) as number;
    assert.equal(back, live);
    await assertClean(o);
    await page.close();
  });

  test('zoom by wall time: each run reads the steps its time range covers, at full resolution, by clock and by elapsed seconds', { timeout: 120_000 }, async () => {
    // a run far longer than the buckets (10 here), one step a second but for an hour-long stall at step 1500
    const root = tempDir('rlprobe-serve-time-');
    const dir = path.join(root, 'timed');
    const t0 = 1_790_000_000;
    const at = (step: number) => t0 + step + (step >= 1500 ? 3600 : 0);
    const rec = new Recorder(dir, { installHandlers: false, captureEnvironment: false, runId: 'timed' });
    for (let step = 0; step < 3000; step++) rec.logStep({ step, timestamp: at(step), entropy_mean: 2 + Math.sin(step / 7) });
    rec.close();
    const server = await startServe({ roots: [root], port: 0, buckets: 10, diagnose: false });
    try {
      const o = await open(server);
      const { page } = o;
      const key = (await page.locator('.run').getAttribute('data-run'))!;
      await tick(page, key);
      const entropy = 'figure[data-chart="entropy"]';
      const xsIn = async (min: number, max: number) =>
        ((await page.evaluate(() => (window as any).__rlprobeServe.charts.charts.get('entropy').u.data[0])) as number[]).filter((x) => x >= min && x <= max);
      for (const [mode, origin] of [['time', 0], ['elapsed', t0]] as const) {
        await markStale(page);
        await page.locator('select[name=x]').selectOption(mode);
        await page.waitForSelector(`${entropy}[data-rendered]:not([data-stale])`);
        const xsNow = async () => ((await page.evaluate(() => (window as any).__rlprobeServe.charts.charts.get('entropy').u.data[0])) as number[]).length;
        const live = await xsNow();
        assert.ok(live <= 40, `${mode}: ${live} live points, bucketed`);
        // steps 1000..1100 by their times; then across the stall, 1490..1510
        for (const [a, b] of [[1000, 1100], [1490, 1510]]) {
          const min = at(a) - origin;
          const max = at(b) - origin;
          await page.evaluate(([lo, hi]) => (window as any).__rlprobeServe.charts.charts.get('entropy').u.setScale('x', { min: lo, max: hi }), [min, max] as const);
          await page.waitForSelector(`${entropy}[data-zoomed="${mode}:${min.toFixed(3)}..${max.toFixed(3)}"]`);
          const want = Array.from({ length: b - a + 1 }, (_, i) => at(a + i) - origin);
          assert.deepEqual(await xsIn(min, max), want, `${mode} ${a}..${b}: every step in view, each once`);
        }
        await page.locator(`${entropy} .u-over`).dblclick();
        await page.waitForSelector(`${entropy}:not([data-zoomed])`);
        assert.equal(await xsNow(), live, `${mode}: the live points back`);
      }
      // inside the stall no step lies in view: the two rows around it are read, nothing breaks
      await page.evaluate(([lo, hi]) => (window as any).__rlprobeServe.charts.charts.get('entropy').u.setScale('x', { min: lo, max: hi }), [at(1499) - t0 + 100, at(1499) - t0 + 200] as const);
      await page.waitForSelector(`${entropy}[data-zoomed^="elapsed:"]`);
      await page.screenshot({ path: path.join(OUTPUT, 'serve-zoom-time.png') });
      await assertClean(o);
      await page.close();
    } finally {
      await server.close();
    }
  });

  test('drill-down: a finding opens with its message and remedy; a sample opens in full with its trial and span tree; a span opens', { timeout: 120_000 }, async () => {
    const o = await open(serving!);
    const { page } = o;
    const drawer = page.locator('#drawer');
    await tick(page, keys.collapse);
    const expected = (findingsOf(entryOf(serving!.ctx, keys.collapse)) as { findings: Array<{ code: string; message: string; remedy: string }> }).findings.find((f) => f.code === 'ENTROPY_COLLAPSE')!;
    assert.ok(expected);
    await page.locator(`.findings .finding[data-code="ENTROPY_COLLAPSE"][data-run="${keys.collapse}"] button.open-finding`).click();
    await page.waitForSelector('#drawer[data-view="finding"] p.remedy');
    assert.equal(await drawer.locator('p.message').textContent(), expected.message);
    assert.equal(await drawer.locator('p.remedy').textContent(), expected.remedy);
    assert.match((await drawer.locator('h2').textContent())!, /ENTROPY_COLLAPSE/);
    assert.ok(await drawer.isVisible());

    // the trial run's sample s-17 at step 3, through the samples browser
    await drawer.locator('button.close').click();
    assert.equal(await drawer.isHidden(), true);
    await tick(page, keys.collapse, false);
    await page.locator('button[data-tab=samples]').click();
    const count = await searchSamples(page, { run: keys.trial, step: '3' });
    assert.equal(count, 1);
    const card = page.locator('.sample-results .card.sample[data-sample="s-17"]');
    assert.equal(await card.locator('pre.text.prompt').textContent(), 'say hello');
    await card.locator('button.open-sample').click();
    await page.waitForSelector('#drawer[data-view="sample"] .span-tree');
    assert.equal(await drawer.locator('pre.text.prompt').textContent(), 'say hello');
    assert.equal(await drawer.locator('pre.text.completion').textContent(), 'hello world');
    const trial = drawer.locator('.card.trial');
    assert.equal(await trial.count(), 1);
    assert.ok(await trial.isVisible());
    assert.match((await trial.locator('h3').textContent())!, new RegExp(`^Trial ${PASS_NAME.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    assert.equal(await drawer.locator('.span-tree li[data-kind="rollout"]').count(), 1);
    const turns = drawer.locator('.span-tree li[data-kind="turn"]');
    assert.ok((await turns.count()) > 0, `span kinds: ${JSON.stringify(await drawer.locator('.span-tree li[data-kind]').evaluateAll((ls) => ls.map((l) => l.getAttribute('data-kind'))))}`);
    await page.screenshot({ path: path.join(OUTPUT, 'serve-drill.png') });

    // a turn's span: its own view, in the same tree
    const turnId = (await turns.first().getAttribute('data-span'))!;
    await turns.first().locator(':scope > button.span-link').click();
    await page.waitForSelector('#drawer[data-view="span"] .span-tree');
    assert.match((await drawer.locator('h2').textContent())!, /^turn /);
    assert.equal(await drawer.locator(`.span-tree li.here[data-span="${turnId}"]`).count(), 1);
    await assertClean(o);
    await page.close();
  });

  test('a hostile run: its names and texts are shown as text, nothing runs, no dialog, no policy violation', { timeout: 120_000 }, async () => {
    const o = await open(serving!);
    const { page } = o;
    const row = runRow(page, keys.hostile);
    assert.equal(await row.locator('.name').textContent(), HOSTILE_ID);
    assert.equal(await row.locator('.meta').first().textContent(), `runs/${HOSTILE_DIR}`);
    await tick(page, keys.hostile);
    await page.waitForSelector('figure[data-chart="reward"][data-rendered]');

    // its completions in the samples browser, as text
    await page.locator('button[data-tab=samples]').click();
    await page.waitForSelector('.sample-results [data-count]');
    const listed = (listSamples(serving!.ctx, keys.hostile, new URLSearchParams()) as { samples: unknown[] }).samples.length;
    assert.equal(Number(await page.getAttribute('.sample-results [data-count]', 'data-count')), listed);
    assert.equal(await page.locator('form.samples select[name=run] option').textContent(), HOSTILE_ID);
    const texts = await page.locator('.sample-results pre.text.completion').allTextContents();
    assert.equal(texts.length, listed);
    for (const t of texts) assert.equal(t, HOSTILE_TEXT);
    await page.locator('.sample-results button.open-sample').first().click();
    await page.waitForSelector('#drawer[data-view="sample"] pre.text.completion');
    assert.equal(await page.locator('#drawer pre.text.completion').textContent(), HOSTILE_TEXT);
    await page.screenshot({ path: path.join(OUTPUT, 'serve-hostile.png') });
    await page.locator('#drawer button.close').click();

    // its page: the id and the model as text
    await page.locator('button[data-tab=run]').click();
    await page.waitForSelector('pre.text.manifest');
    assert.equal(await page.locator('#main h2').textContent(), HOSTILE_ID);
    const manifest = JSON.parse((await page.locator('pre.text.manifest').textContent())!) as { run_id: string; model_name: string };
    assert.equal(manifest.run_id, HOSTILE_ID);
    assert.equal(manifest.model_name, `<b>${HOSTILE_ID}</b>`);

    // no markup from the run made it into the document
    assert.equal(await page.locator('img, b').count(), 0);
    assert.deepEqual(await page.locator('script').evaluateAll((ss) => ss.map((s) => s.getAttribute('src'))), ['/assets/uplot.js', '/assets/app.js']);
    await assertClean(o);
    await page.close();
  });

  test('samples browser: the text and reason filters narrow the results as the API does', { timeout: 120_000 }, async () => {
    const o = await open(serving!);
    const { page } = o;
    await page.locator('button[data-tab=samples]').click();
    const api = (key: string, q: Record<string, string>) => (listSamples(serving!.ctx, key, new URLSearchParams(q)) as { samples: Array<{ completion_text: string; capture_reason: string }> }).samples;

    // text: healthy completions read "completion <step>/<k>"
    const all = await searchSamples(page, { run: keys.healthy });
    assert.equal(all, api(keys.healthy, {}).length);
    const text = 'completion 12/';
    const byText = await searchSamples(page, { text });
    const expectText = api(keys.healthy, { text });
    assert.equal(byText, expectText.length);
    assert.ok(byText > 0 && byText < all, `text filter: ${byText} of ${all}`);
    const completions = await page.locator('.sample-results pre.text.completion').allTextContents();
    assert.deepEqual(completions, expectText.map((s) => s.completion_text));
    for (const c of completions) assert.ok(c.includes(text), c);

    // reason: the collapse run's samples are top_k, bottom_k and random
    const steps = await searchSamples(page, { run: keys.collapse, text: '', steps: '0..19' });
    assert.equal(steps, api(keys.collapse, { steps: '0..19' }).length);
    const byReason = await searchSamples(page, { reason: 'top_k' });
    const expectReason = api(keys.collapse, { steps: '0..19', reason: 'top_k' });
    assert.equal(byReason, expectReason.length);
    assert.ok(byReason > 0 && byReason < steps, `reason filter: ${byReason} of ${steps}`);
    for (const line of await page.locator('.sample-results .card.sample > div:first-child').allTextContents()) assert.match(line, / · top_k · /);
    await page.screenshot({ path: path.join(OUTPUT, 'serve-samples.png') });
    await assertClean(o);
    await page.close();
  });

  test('diff: two runs picked as A and B compare metric by metric, the lead divergence named', { timeout: 120_000 }, async () => {
    const o = await open(serving!);
    const { page } = o;
    await page.locator('button[data-tab=diff]').click();
    const metrics = page.locator('.diff-result table.metrics tr[data-metric]');
    await metrics.first().waitFor();
    await page.locator('select[name=a]').selectOption(keys.healthy);
    await metrics.first().waitFor();
    await page.locator('select[name=b]').selectOption(keys.collapse);
    await metrics.first().waitFor();
    const expected = (await runDiff(serving!.ctx, keys.healthy, keys.collapse)) as {
      lead: { metric: string; step: number } | null;
      metrics: Array<{ metric: string; divergence: { step: number; difference: number; sigma: number } | null }>;
    };
    assert.ok(expected.lead, 'entropy collapse: a metric diverges');
    assert.equal(await page.locator('select[name=a]').inputValue(), keys.healthy);
    assert.equal(await page.locator('select[name=b]').inputValue(), keys.collapse);
    const rows = await metrics.evaluateAll((rs) => rs.map((r) => r.getAttribute('data-metric')));
    assert.ok(rows.length > 0);
    assert.deepEqual(rows, expected.metrics.map((m) => m.metric));
    assert.equal(await page.locator('.diff-result p.lead').textContent(), `${expected.lead.metric} diverged first, at step ${expected.lead.step}.`);
    // where it diverged: the step, B − A there, and that in σ (the noise of the difference)
    const lead = expected.metrics.find((m) => m.metric === expected.lead!.metric)!.divergence!;
    const sigmas = (lead.difference / lead.sigma).toFixed(1);
    assert.ok(Math.abs(Number(sigmas)) >= 1, `a divergence is several σ: ${JSON.stringify(lead)}`);
    assert.equal(
      await page.locator(`.diff-result table.metrics tr[data-metric="${expected.lead.metric}"] td`).last().textContent(),
      `step ${lead.step} (${lead.difference > 0 ? '+' : ''}${shownNumber(lead.difference)}, ${sigmas} σ)`,
    );
    for (const m of expected.metrics.filter((x) => x.divergence === null)) {
      assert.equal(await page.locator(`.diff-result table.metrics tr[data-metric="${m.metric}"] td`).last().textContent(), '—', m.metric);
    }
    await page.screenshot({ path: path.join(OUTPUT, 'serve-diff.png') });
    await assertClean(o);
    await page.close();
  });
});
