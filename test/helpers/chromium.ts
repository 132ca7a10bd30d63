/**
 * Debian's Chromium for the browser tests (report and dashboard): where it is, whether a
 * suite skips (locally without it; under CI=true its absence fails), a headless context,
 * and what a page did wrong (console errors and warnings, page errors, dialogs) and asked for.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

export const chromiumSkip: string | false = CHROMIUM === undefined && !process.env.CI ? 'Chromium not installed (apt-get install chromium); CI=true makes this a failure' : false;

/** A headless context, 1400 × 1000; `offline` fails every request the page makes off file://. */
export function launchChromium(options: { offline?: boolean } = {}): Promise<BrowserContext> {
  assert.ok(CHROMIUM, 'CI=true: Chromium must be installed (.ci/run installs Debian\'s chromium)');
  return chromium.launchPersistentContext(mkdtempSync(path.join(os.tmpdir(), 'rlprobe-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    offline: options.offline ?? false,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export interface PageWatch {
  errors: string[];
  requests: string[];
  dialogs: string[];
}

/** Records what `page` does wrong and asks for; a dialog is dismissed (and recorded). */
export function watchPage(page: Page): PageWatch {
  const watch: PageWatch = { errors: [], requests: [], dialogs: [] };
  page.on('console', (m) => {
    // the tests' own pixel reads (getImageData) draw Chrome's readback hint: not the page's
    if (m.type() === 'warning' && m.text().includes('willReadFrequently')) return;
    if (m.type() === 'error' || m.type() === 'warning') watch.errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => watch.errors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => watch.requests.push(r.url()));
  page.on('dialog', (d) => {
    watch.dialogs.push(d.message());
    void d.dismiss();
  });
  return watch;
}
