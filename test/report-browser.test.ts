/// <reference lib="dom" />
/**
 * `probe report` in a real browser (issue 5): the HTML opened from disk in headless
 * Chromium (Debian's `chromium`, driven by playwright-core; `.ci/run` installs it). Every
 * chart must have drawn its lines, no console error, the findings' marks present and
 * clickable, the hostile sample inert. Screenshots land in test-output/ (a CI artifact).
 * Without Chromium the suite is skipped locally and fails under CI=true.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';

import { RunReader, buildReport, renderHtml } from '../ts/index.js';
import { ROOT, cleanupTempDirs, tempDir } from './helpers/fixtures.js';
import { recordReportRun } from './helpers/report-runs.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const OUTPUT = path.join(ROOT, 'test-output');
const skip = CHROMIUM === undefined && !process.env.CI ? 'Chromium not installed (apt-get install chromium); CI=true makes this a failure' : false;

let context: BrowserContext;
let reportFile = '';
let againstFile = '';

before(async () => {
  if (skip) return;
  assert.ok(CHROMIUM, 'CI=true: Chromium must be installed (.ci/run installs Debian\'s chromium)');
  const dir = tempDir('rlprobe-report-browser-');
  const run = recordReportRun('browser');
  const baseline = recordReportRun('baseline', { collapse: 'none', seed: 5 });
  reportFile = path.join(dir, 'report.html');
  // step 300 holds the hostile sample
  writeFileSync(reportFile, renderHtml(await buildReport(RunReader.open(run), { steps: [0, 260, 300, 399] })));
  againstFile = path.join(dir, 'against.html');
  writeFileSync(againstFile, renderHtml(await buildReport(RunReader.open(baseline), { against: RunReader.open(run) })));
  mkdirSync(OUTPUT, { recursive: true });
  context = await chromium.launchPersistentContext(mkdtempSync(path.join(os.tmpdir(), 'rlprobe-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    // the page must need no network: any request other than the file itself fails the test
    offline: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
after(async () => {
  await context?.close();
  cleanupTempDirs();
});

interface Opened {
  page: Page;
  errors: string[];
  requests: string[];
  dialogs: string[];
}

async function open(file: string): Promise<Opened> {
  const page = await context.newPage();
  const errors: string[] = [];
  const requests: string[] = [];
  const dialogs: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector('body[data-charts]', { timeout: 15_000 });
  return { page, errors, requests, dialogs };
}

/** Per chart: whether it rendered, and how many canvas pixels carry its first series' colour. */
function chartPixels(page: Page): Promise<Array<{ id: string; rendered: string | undefined; width: number; inked: number }>> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>('.chart[data-chart]')).map((el) => {
      const canvas = el.querySelector('canvas');
      let inked = 0;
      if (canvas && canvas.width > 0) {
        const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        // the first series is drawn in #1f77b4 (31, 119, 180)
        for (let i = 0; i < px.length; i += 4) {
          if (px[i + 3] > 0 && Math.abs(px[i] - 31) < 40 && Math.abs(px[i + 1] - 119) < 40 && Math.abs(px[i + 2] - 180) < 40) inked++;
        }
      }
      return { id: el.closest('figure')!.id, rendered: el.dataset.rendered, width: canvas?.width ?? 0, inked };
    }),
  );
}

describe('probe report in Chromium', { skip }, () => {
  test('every chart draws its lines, no console error, no request but the file, the hostile sample stays text', async () => {
    const { page, errors, requests, dialogs } = await open(reportFile);
    const charts = await chartPixels(page);
    assert.equal(charts.length, 11);
    assert.equal(await page.getAttribute('body', 'data-charts'), '11');
    assert.equal(await page.getAttribute('body', 'data-charts-failed'), '0');
    for (const c of charts) {
      assert.equal(c.rendered, 'true', c.id);
      assert.ok(c.width > 200, `${c.id}: canvas ${c.width} px wide`);
      assert.ok(c.inked > 100, `${c.id}: only ${c.inked} pixels of its first series drawn`);
    }
    assert.deepEqual(errors, []);
    assert.deepEqual(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')), []);
    assert.deepEqual(dialogs, []);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    // the hostile completion is on the page as text
    await page.locator('#samples-step-300 details.texts').first().evaluate((d) => ((d as HTMLDetailsElement).open = true));
    assert.ok((await page.locator('#samples-step-300 pre.text').allTextContents()).some((t) => t.includes('</script><script>window.__pwned = 1</script>')));
    await page.screenshot({ path: path.join(OUTPUT, 'report.png'), fullPage: true });
    await page.close();
  });

  test("a finding's mark sits on its chart at the onset, and clicking it opens the finding with its evidence samples", async () => {
    const { page, errors } = await open(reportFile);
    const mark = page.locator('#chart-lengths .mark', { hasText: 'TRUNCATION_COLLAPSE' });
    assert.equal(await mark.count(), 1);
    const target = (await mark.getAttribute('data-target'))!;
    const finding = page.locator(`#${target}`);
    assert.equal(await finding.evaluate((d) => (d as HTMLDetailsElement).open), false);
    // the flag sits where the x scale puts the onset: left of the chart's middle for an onset at ~250 of 400
    const box = (await mark.boundingBox())!;
    const plot = (await page.locator('#chart-lengths .u-over').boundingBox())!;
    const frac = (box.x - plot.x) / plot.width;
    assert.ok(frac > 0.55 && frac < 0.7, `mark at ${frac.toFixed(3)} of the plot`);
    await mark.click();
    assert.equal(await finding.evaluate((d) => (d as HTMLDetailsElement).open), true);
    assert.ok(await finding.isVisible());
    const samples = finding.locator('.sample');
    assert.ok((await samples.count()) > 0);
    assert.match((await samples.first().textContent())!, /truncated\s*yes/);
    assert.deepEqual(errors, []);
    await page.screenshot({ path: path.join(OUTPUT, 'report-finding.png') });
    await page.close();
  });

  test('the --against report draws A over B with the divergence marked', async () => {
    const { page, errors } = await open(againstFile);
    const charts = await chartPixels(page);
    const diff = charts.filter((c) => c.id.startsWith('chart-diff-'));
    assert.ok(diff.length > 0, `charts: ${charts.map((c) => c.id)}`);
    for (const c of charts) assert.ok(c.rendered === 'true' && c.inked > 100, `${c.id}: ${JSON.stringify(c)}`);
    assert.ok((await page.locator('#diff .mark-divergence').count()) > 0);
    assert.deepEqual(errors, []);
    await page.locator('#diff').screenshot({ path: path.join(OUTPUT, 'report-against.png') });
    await page.close();
  });
});
