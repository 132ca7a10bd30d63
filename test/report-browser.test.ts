/// <reference lib="dom" />
/**
 * `probe report` in a real browser (issues 5 and 20): the HTML opened from disk in headless
 * Chromium (Debian's `chromium`, driven by playwright-core; `.ci/run` installs it). Every
 * chart must have drawn its lines, no console error, the findings' marks present and
 * clickable, the hostile sample inert, the evidence and each step's first sample open, the
 * reward's spread a band around its mean (no second axis), and a report of several runs a
 * line and a legend entry per run in distinct colours. Screenshots land in test-output/ (a
 * CI artifact). Without Chromium the suite is skipped locally and fails under CI=true.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import type { BrowserContext, Page } from 'playwright-core';

import { RunReader, buildReport, renderHtml } from '../ts/index.js';
import { renderRunsHtml } from '../ts/report/runs-html.js';
import { buildRunsReport } from '../ts/report/runs-report.js';
import { chromiumSkip, launchChromium, watchPage } from './helpers/chromium.js';
import { ROOT, cleanupTempDirs, tempDir } from './helpers/fixtures.js';
import { recordReportRun } from './helpers/report-runs.js';

const OUTPUT = path.join(ROOT, 'test-output');
const skip = chromiumSkip;

let context: BrowserContext;
let reportFile = '';
let againstFile = '';
let defaultFile = '';
let runsFile = '';

before(async () => {
  if (skip) return;
  const dir = tempDir('rlprobe-report-browser-');
  const run = recordReportRun('browser');
  const baseline = recordReportRun('baseline', { collapse: 'none', seed: 5 });
  reportFile = path.join(dir, 'report.html');
  // step 300 holds the hostile sample
  writeFileSync(reportFile, renderHtml(await buildReport(RunReader.open(run), { steps: [0, 260, 300, 399] })));
  againstFile = path.join(dir, 'against.html');
  writeFileSync(againstFile, renderHtml(await buildReport(RunReader.open(baseline), { against: RunReader.open(run) })));
  defaultFile = path.join(dir, 'default.html');
  writeFileSync(defaultFile, renderHtml(await buildReport(RunReader.open(run))));
  runsFile = path.join(dir, 'runs.html');
  writeFileSync(runsFile, renderRunsHtml(await buildRunsReport([RunReader.open(run), RunReader.open(baseline)])));
  mkdirSync(OUTPUT, { recursive: true });
  // the page must need no network: any request other than the file itself fails the test
  context = await launchChromium({ offline: true });
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
  const { errors, requests, dialogs } = watchPage(page);
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector('body[data-charts]', { timeout: 15_000 });
  return { page, errors, requests, dialogs };
}

/**
 * Per chart: whether it rendered, and how many canvas pixels carry a series' colour (the
 * first's: #1f77b4) opaquely: a line, not a band's translucent fill.
 */
function chartPixels(page: Page, rgb: [number, number, number] = [31, 119, 180]): Promise<Array<{ id: string; rendered: string | undefined; width: number; inked: number }>> {
  return page.evaluate(
    ([r, g, b]) =>
      Array.from(document.querySelectorAll<HTMLElement>('.chart[data-chart]')).map((el) => {
        const canvas = el.querySelector('canvas');
        let inked = 0;
        if (canvas && canvas.width > 0) {
          const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
          for (let i = 0; i < px.length; i += 4) {
            if (px[i + 3] > 128 && Math.abs(px[i] - r) < 40 && Math.abs(px[i + 1] - g) < 40 && Math.abs(px[i + 2] - b) < 40) inked++;
          }
        }
        return { id: el.closest('figure')!.id, rendered: el.dataset.rendered, width: canvas?.width ?? 0, inked };
      }),
    rgb,
  );
}

/**
 * A chart's canvas (transparent: the page is its background), column by column: where the
 * mean's line is (#1f77b4, opaque) and how far the band's fill (#1f77b4 at 14 % opacity)
 * reaches above and below it.
 */
function bandAroundLine(page: Page, chart: string): Promise<{ columns: number; inside: number; bandRows: number }> {
  return page.evaluate((id) => {
    const canvas = document.querySelector<HTMLCanvasElement>(`#${id} canvas`)!;
    const { width, height } = canvas;
    const px = canvas.getContext('2d')!.getImageData(0, 0, width, height).data;
    let columns = 0;
    let inside = 0;
    let bandRows = 0;
    for (let x = 0; x < width; x++) {
      let top = Infinity;
      let bottom = -Infinity;
      const line: number[] = [];
      for (let y = 0; y < height; y++) {
        const i = 4 * (y * width + x);
        // (no helper functions: the page runs this source as is, without the test's transpiler helpers)
        if (Math.abs(px[i] - 31) >= 40 || Math.abs(px[i + 1] - 119) >= 40 || Math.abs(px[i + 2] - 180) >= 40) continue;
        if (px[i + 3] >= 20 && px[i + 3] <= 60) {
          top = Math.min(top, y);
          bottom = Math.max(bottom, y);
          bandRows++;
        } else if (px[i + 3] > 200) line.push(y);
      }
      if (line.length === 0 || top > bottom) continue;
      columns++;
      const mid = line[line.length >> 1];
      if (mid >= top && mid <= bottom) inside++;
    }
    return { columns, inside, bandRows };
  }, chart);
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

  test("the evidence samples and each step's first sample are open; the first samples section is the first finding's onset", async () => {
    const { page, errors } = await open(defaultFile);
    const first = page.locator('.forensic-step').first();
    assert.match((await first.locator('p.muted').first().textContent())!, /^onset of /);
    for (const step of await page.locator('.forensic-step').all()) {
      const cards = step.locator('details.texts');
      assert.ok((await cards.count()) > 1);
      assert.equal(await cards.first().evaluate((d) => (d as HTMLDetailsElement).open), true);
      assert.ok(await cards.first().locator('pre.text').first().isVisible(), 'the first card\'s text is on the page');
      assert.equal(await cards.nth(1).evaluate((d) => (d as HTMLDetailsElement).open), false);
    }
    // a finding opened: its evidence samples' texts are there without another click
    const finding = page.locator('details.finding').first();
    await finding.locator(':scope > summary').click();
    const evidence = finding.locator('.sample details.texts');
    assert.ok((await evidence.count()) > 0);
    for (const d of await evidence.all()) assert.ok(await d.locator('pre.text').first().isVisible());
    assert.deepEqual(errors, []);
    await page.screenshot({ path: path.join(OUTPUT, 'report-samples-open.png') });
    await page.close();
  });

  test('the reward spread is a band around the mean on the reward axis, not a line on a second axis', async () => {
    const { page, errors } = await open(reportFile);
    const reward = page.locator('#chart-reward');
    // the step axis and the reward axis: no right axis
    assert.equal(await reward.locator('.u-axis').count(), 2);
    const legend = await reward
      .locator('.u-legend .u-series')
      .evaluateAll((rows) => rows.filter((r) => getComputedStyle(r).display !== 'none').map((r) => r.querySelector('.u-label')!.textContent));
    assert.deepEqual(legend.slice(1), ['reward_mean', 'reward_mean ± reward_std']);
    const band = await bandAroundLine(page, 'chart-reward');
    assert.ok(band.bandRows > 2000, `band fill: ${band.bandRows} pixels`);
    assert.ok(band.columns > 300, `${band.columns} columns hold the line and the band`);
    assert.ok(band.inside / band.columns > 0.95, `the mean is inside its band in ${band.inside} of ${band.columns} columns`);
    await reward.screenshot({ path: path.join(OUTPUT, 'report-reward-band.png') });
    // hiding the band from the legend hides both its edges
    await reward.locator('.u-legend .u-series:not(.band-lower)', { hasText: '± reward_std' }).locator('th').click();
    const hidden = (await bandAroundLine(page, 'chart-reward')).bandRows;
    // what is left is the line's anti-aliased edge
    assert.ok(hidden < band.bandRows / 10, `the band is gone: ${hidden} of ${band.bandRows} pixels left`);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('several runs: a line and a legend entry per run in distinct colours, each run\'s findings marked with its name', async () => {
    const { page, errors } = await open(runsFile);
    assert.equal(await page.getAttribute('body', 'data-charts-failed'), '0');
    const reward = page.locator('#chart-metric-reward-mean');
    const rows = reward.locator('.u-legend .u-series');
    const visible = await rows.evaluateAll((rs) =>
      rs.filter((r) => getComputedStyle(r).display !== 'none').map((r) => ({ label: r.querySelector('.u-label')!.textContent, colour: getComputedStyle(r.querySelector('.u-marker')!).borderColor })),
    );
    assert.deepEqual(visible.slice(1).map((v) => v.label), ['browser', 'baseline', 'browser ± reward_std', 'baseline ± reward_std']);
    assert.notEqual(visible[1].colour, visible[2].colour);
    // each run's line is drawn in its colour (#1f77b4, #2ca02c)
    for (const rgb of [[31, 119, 180], [44, 160, 44]] as Array<[number, number, number]>) {
      const charts = await chartPixels(page, rgb);
      const c = charts.find((x) => x.id === 'chart-metric-reward-mean')!;
      assert.ok(c.rendered === 'true' && c.inked > 100, `${rgb}: ${JSON.stringify(c)}`);
    }
    // the swatches in the runs table are the lines' colours
    const swatches = await page.locator('table.runs .swatch').evaluateAll((s) => s.map((x) => getComputedStyle(x).backgroundColor));
    assert.deepEqual(swatches, ['rgb(31, 119, 180)', 'rgb(44, 160, 44)']);
    // a finding's mark names its run and opens that run's finding
    const mark = page.locator('#chart-metric-truncation-rate .mark', { hasText: 'browser: TRUNCATION_COLLAPSE' });
    assert.equal(await mark.count(), 1);
    const target = (await mark.getAttribute('data-target'))!;
    assert.match(target, /^run1-finding-\d+$/);
    await mark.click();
    assert.equal(await page.locator(`#${target}`).evaluate((d) => (d as HTMLDetailsElement).open), true);
    assert.deepEqual(errors, []);
    await page.locator('#charts').screenshot({ path: path.join(OUTPUT, 'report-runs.png') });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(OUTPUT, 'report-runs-top.png') });
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
