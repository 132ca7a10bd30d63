/**
 * The page's files, served from the package (no CDN: the machine may be offline): the
 * client under ts/serve/client and uPlot from its package, the chart library the report
 * uses. A fixed map: a name not in it is a 404, so no request names a file.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** Files of ts/serve/client served under /assets/ (and index.html at /). */
export const CLIENT_FILES = ['index.html', 'app.css', 'app.js', 'api.js', 'dom.js', 'format.js', 'runs.js', 'charts.js', 'drill.js', 'samples.js', 'diff.js'] as const;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
};

function asset(body: Buffer, name: string): Asset {
  const ext = name.slice(name.lastIndexOf('.'));
  return { body, type: TYPES[ext] ?? 'application/octet-stream', etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 20)}"` };
}

/** Reads every asset once (they are small: about 150 KB with uPlot). */
export function loadAssets(): Map<string, Asset> {
  const out = new Map<string, Asset>();
  for (const name of CLIENT_FILES) {
    // from ts/serve/ and from dist/serve/ alike: the client ships as source in the package
    out.set(name, asset(readFileSync(new URL(`../../ts/serve/client/${name}`, import.meta.url)), name));
  }
  const require = createRequire(import.meta.url);
  out.set('uplot.js', asset(readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js')), 'uplot.js'));
  out.set('uplot.css', asset(readFileSync(require.resolve('uplot/dist/uPlot.min.css')), 'uplot.css'));
  return out;
}
