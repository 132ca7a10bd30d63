/**
 * The HTTP side of `probe serve`: GET and HEAD only, every request checked before it is
 * routed. A raw path holding `..`, a backslash, or an encoded dot, separator, NUL or `%`
 * is refused before any decoding (no route takes a file path: runs are named by key, assets
 * by a fixed map). On loopback the Host header must name loopback (a page on another site
 * cannot reach the server through DNS rebinding). Every answer carries a Content-Security-
 * Policy that allows scripts and styles from this server only, so text from a run can
 * never run as script even if a page bug let it into the markup.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { RlprobeError } from '../errors.js';
import { chartSnapshot, findingDetail, findingsOf, entryOf, HttpError, listRuns, listSamples, runDiff, runEvents, runInfo, sampleDetail, seriesRange, spanDetail } from './api.js';
import type { ServeContext } from './api.js';
import type { Asset } from './assets.js';
import type { EventHub } from './sse.js';
import { KEY_PATTERN } from './run-index.js';

export const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
};

/** Raw-path sequences refused before decoding: traversal, separators and NUL, encoded or not, and double encoding. */
const REFUSED_IN_PATH = /\.\.|\\|%2e|%2f|%5c|%00|%25/i;

/** JSON with the numbers JSON cannot hold written as strings ("NaN", "Infinity"), as `probe samples --json` does. */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
    if (typeof v === 'bigint') return v.toString();
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return Array.from(v as unknown as ArrayLike<number>);
    return v;
  });
}

export interface HttpDeps {
  ctx: ServeContext;
  hub: EventHub;
  assets: Map<string, Asset>;
  /** The port listened on (for the Host check), and whether only loopback is served. */
  port: () => number;
  loopback: boolean;
  /** The interface listened on (also a name a loopback Host may give). */
  host: string;
  /** Called once the page's runs are known, so their charts are built and followed. */
  onStream: (runs: Set<string>) => void;
  hello: () => unknown;
}

export function handler(deps: HttpDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    route(deps, req, res).catch((error: unknown) => fail(res, error));
  };
}

async function route(deps: HttpDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    throw new HttpError(405, `${req.method ?? 'this method'} is not allowed: the dashboard is read-only`);
  }
  if (deps.loopback && !loopbackHost(req.headers.host, deps.port(), deps.host)) {
    throw new HttpError(421, `Host ${JSON.stringify(req.headers.host ?? '')} is not this server: open it as http://127.0.0.1:${deps.port()}/`);
  }
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  const rawPath = q < 0 ? raw : raw.slice(0, q);
  if (!rawPath.startsWith('/') || REFUSED_IN_PATH.test(rawPath)) throw new HttpError(400, 'refused: the path holds "..", a backslash, or an encoded dot, separator, NUL or "%"');
  const url = new URL(raw, 'http://serve.invalid');
  const parts = rawPath.split('/').slice(1);
  if (rawPath === '/' || rawPath === '/index.html') return sendAsset(deps, req, res, 'index.html');
  if (parts[0] === 'assets' && parts.length === 2) return sendAsset(deps, req, res, parts[1]);
  if (parts[0] !== 'api') throw new HttpError(404, `no page ${JSON.stringify(rawPath)}`);
  const { ctx } = deps;
  const sendJson = (value: unknown) => json(req, res, 200, value);
  if (parts[1] === 'runs' && parts.length === 2) return sendJson(listRuns(ctx));
  if (parts[1] === 'stream' && parts.length === 2) {
    const runs = new Set((url.searchParams.get('runs') ?? '').split(',').filter((k) => k !== ''));
    for (const k of runs) if (!KEY_PATTERN.test(k)) throw new HttpError(400, `invalid run key ${JSON.stringify(k)}: expected 16 hex digits`);
    deps.hub.open(res, runs, deps.hello());
    deps.onStream(runs);
    return;
  }
  if (parts[1] === 'diff' && parts.length === 2) {
    const a = url.searchParams.get('a') ?? '';
    const b = url.searchParams.get('b') ?? '';
    return sendJson(await runDiff(ctx, a, b));
  }
  if (parts[1] === 'runs' && parts.length >= 3) {
    const key = parts[2];
    if (!KEY_PATTERN.test(key)) throw new HttpError(404, `no run ${JSON.stringify(key)}: a run key is 16 hex digits`);
    const rest = parts.slice(3);
    if (rest.length === 0) return sendJson(runInfo(ctx, key));
    if (rest.length === 1 && rest[0] === 'charts') return sendJson(await chartSnapshot(ctx, key));
    if (rest.length === 1 && rest[0] === 'series') return sendJson(seriesRange(ctx, key, url.searchParams));
    if (rest.length === 1 && rest[0] === 'findings') return sendJson(findingsOf(entryOf(ctx, key)));
    if (rest.length === 2 && rest[0] === 'findings') return sendJson(findingDetail(ctx, key, decoded(rest[1])));
    if (rest.length === 1 && rest[0] === 'samples') return sendJson(listSamples(ctx, key, url.searchParams));
    if (rest.length === 1 && rest[0] === 'sample') return sendJson(sampleDetail(ctx, key, url.searchParams));
    if (rest.length === 2 && rest[0] === 'spans') return sendJson(spanDetail(ctx, key, decoded(rest[1])));
    if (rest.length === 1 && rest[0] === 'events') return sendJson(runEvents(ctx, key, url.searchParams));
  }
  throw new HttpError(404, `no API ${JSON.stringify(rawPath)}`);
}

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `invalid path segment ${JSON.stringify(segment)}: bad percent-encoding`);
  }
}

/**
 * Whether a Host header names this loopback server: the names of loopback and the address it
 * listens on, with its port (or without, on port 80, as browsers send it). A page of another
 * site reaching the server through DNS rebinding sends its own name, and is refused.
 */
function loopbackHost(host: string | undefined, port: number, bound: string): boolean {
  if (host === undefined) return false;
  const names = new Set(['127.0.0.1', 'localhost', '[::1]', bound.includes(':') && !bound.startsWith('[') ? `[${bound}]` : bound]);
  const h = host.toLowerCase();
  for (const name of names) if (h === `${name}:${port}` || (port === 80 && h === name)) return true;
  return false;
}

function sendAsset(deps: HttpDeps, req: IncomingMessage, res: ServerResponse, name: string): void {
  const a = deps.assets.get(name);
  if (!a) throw new HttpError(404, `no asset ${JSON.stringify(name)}`);
  if (req.headers['if-none-match'] === a.etag) {
    res.writeHead(304, { ETag: a.etag });
    res.end();
    return;
  }
  res.writeHead(200, { 'Content-Type': a.type, 'Content-Length': a.body.length, ETag: a.etag, 'Cache-Control': 'no-cache' });
  res.end(req.method === 'HEAD' ? undefined : a.body);
}

function json(req: IncomingMessage, res: ServerResponse, status: number, value: unknown): void {
  const body = Buffer.from(encodeJson(value));
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function fail(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const status = error instanceof HttpError ? error.status : error instanceof RlprobeError && error.code === 'RLPROBE_INVALID_QUERY' ? 400 : 500;
  const message = (error as Error).message ?? String(error);
  const body = Buffer.from(encodeJson({ error: message, ...(error instanceof RlprobeError ? { code: error.code } : {}) }));
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
  res.end(body);
}
