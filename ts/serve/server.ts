/**
 * `probe serve`: a live dashboard over a folder of runs. Wires the run index (what runs
 * there are), their polls (what changed), the charts of the runs a page shows (grown from
 * new rows only), the diagnosis queue, and the HTTP and event-stream side. Read-only:
 * nothing here writes to a run.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { RlprobeError } from '../errors.js';
import { VERSION } from '../version.js';
import type { ServeContext } from './api.js';
import { findingsOf } from './api.js';
import { loadAssets } from './assets.js';
import { ChartsCache } from './charts-cache.js';
import { DiagnosisQueue } from './diagnosis.js';
import { encodeJson, handler } from './http.js';
import { isLoopback, parseServeOptions } from './options.js';
import type { ServeOptionsInput } from './options.js';
import type { PollChange, RunEntry, RunRow } from './run-entry.js';
import { RunIndex } from './run-index.js';
import { EventHub } from './sse.js';

/** How often a run that has ended is looked at (it may be resumed). */
const ENDED_POLL_MS = 10_000;

export interface Serving {
  url: string;
  port: number;
  host: string;
  /** Runs found when it started. */
  runs: number;
  ctx: ServeContext;
  hub: EventHub;
  /** Stops polling, ends the streams, closes the server; resolves when all is closed. */
  close(): Promise<void>;
}

export async function startServe(input: ServeOptionsInput): Promise<Serving> {
  const options = parseServeOptions(input);
  const index = new RunIndex(options.roots);
  const hub = new EventHub(encodeJson);
  const charts = new ChartsCache(options.buckets, options.maxChartRuns, () => hub.watched());
  const lastPolled = new Map<string, number>();
  /** The run-list rows of `entries`; one that cannot be shown is left out (its next look says why). */
  const rows = (entries: RunEntry[]): RunRow[] => {
    const out: RunRow[] = [];
    for (const e of entries) {
      try {
        out.push(e.row());
      } catch (error) {
        e.failed(error);
      }
    }
    return out;
  };
  const diagnosis = new DiagnosisQueue((entry, fresh) => {
    // a run removed while it was diagnosed is not sent back to the pages
    if (index.entries.get(entry.key) !== entry) return;
    hub.send('findings', { ...(findingsOf(entry) as object), new: fresh.map((f) => f.code) }, null);
    hub.send('runs', { changed: rows([entry]), removed: [] });
  }, undefined, options.diagnose);
  const ctx: ServeContext = { index, charts, diagnosis, hub };
  const assets = loadAssets();

  /** What a page holds of a run's points: deltas from the bucket it last saw. */
  const sent = new Map<string, { generation: string; buckets: number }>();
  const pushSeries = (entry: RunEntry, c: Awaited<ReturnType<ChartsCache['of']>>) => {
    const last = sent.get(entry.key);
    const from = last && last.generation === c.generation ? Math.max(0, last.buckets - 1) : 0;
    sent.set(entry.key, { generation: c.generation, buckets: c.bucketCount });
    hub.send('series', { run: entry.key, specs: c.specs(), ...c.points(from), at: Date.now() }, entry.key);
  };

  /** One look at one run; a failure is the run's error (shown on its row), never the loop's. */
  const look = (entry: RunEntry, now: number): PollChange | null => {
    lastPolled.set(entry.key, now);
    try {
      return entry.poll();
    } catch (error) {
      entry.failed(error);
      return null;
    }
  };
  const pollOne = async (entry: RunEntry, now: number): Promise<boolean> => {
    const change = look(entry, now);
    if (change === null) return true;
    if ((change.steps || charts.isBehind(entry.key)) && charts.held(entry.key)) {
      const grown = await charts.follow(entry);
      if (grown) pushSeries(entry, grown);
    } else if (change.steps && hub.watched().has(entry.key)) {
      // a page shows it but its charts are not held (a failed build): build them now, all points to the page
      const built = await charts.of(entry).catch(() => null);
      if (built) {
        sent.delete(entry.key);
        pushSeries(entry, built);
      }
    }
    if (change.liveFindings) hub.send('findings', { ...(findingsOf(entry) as object), new: [] }, null);
    if (change.marks.length) hub.send('marks', { run: entry.key, marks: change.marks }, entry.key);
    if (options.diagnose) diagnosis.consider(entry, now);
    return change.row;
  };

  let ticking = false;
  let stopped = false;
  const tick = async () => {
    if (ticking || stopped) return;
    ticking = true;
    try {
      const now = Date.now();
      const changed: RunEntry[] = [];
      for (const entry of index.entries.values()) {
        if (stopped) return;
        if (entry.ended && now - (lastPolled.get(entry.key) ?? 0) < ENDED_POLL_MS) continue;
        if (await pollOne(entry, now)) changed.push(entry);
      }
      // a run removed by a search during the looks is not sent back to the pages
      const still = changed.filter((e) => index.entries.get(e.key) === e);
      if (still.length) hub.send('runs', { changed: rows(still), removed: [] });
    } finally {
      ticking = false;
    }
  };
  const rescan = () => {
    if (stopped) return;
    const { added, removed } = index.scan();
    for (const k of removed) {
      charts.drop(k);
      diagnosis.forget(k);
      sent.delete(k);
    }
    const now = Date.now();
    for (const e of added) {
      look(e, now);
      if (options.diagnose) diagnosis.consider(e, now);
    }
    if (added.length || removed.length) hub.send('runs', { added: rows(added), changed: [], removed });
  };

  const server: Server = createServer(
    handler({
      ctx,
      hub,
      assets,
      port: (): number => (server.address() as AddressInfo).port,
      loopback: isLoopback(options.host),
      host: options.host,
      hello: () => ({ version: VERSION, pollMs: options.pollMs }),
      onStream: (runs) => {
        for (const key of runs) {
          const entry = index.get(key);
          // built now, so the page's /charts finds it ready and polls follow it from here
          if (entry) charts.of(entry).catch(() => undefined);
        }
      },
    }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') reject(new RlprobeError('RLPROBE_IO', `port ${options.port} on ${options.host} is in use (--port 0 picks a free one)`));
      else reject(new RlprobeError('RLPROBE_IO', `cannot listen on ${options.host}:${options.port}: ${error.message}`));
    });
    server.listen(options.port, options.host, () => resolve());
  });
  // the runs are found once the port is ours: a busy port starts nothing (no diagnosis to wait for)
  try {
    rescan();
  } catch (error) {
    server.close();
    throw error;
  }
  const pollTimer = setInterval(() => void tick().catch(() => undefined), options.pollMs);
  const scanTimer = setInterval(() => {
    try {
      rescan();
    } catch {
      // a folder unreadable for a moment: the next search tries again
    }
  }, options.rescanMs);
  const port = (server.address() as AddressInfo).port;
  const shownHost = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  return {
    url: `http://${shownHost}:${port}/`,
    port,
    host: options.host,
    runs: index.entries.size,
    ctx,
    hub,
    close: async () => {
      if (stopped) return;
      stopped = true;
      clearInterval(pollTimer);
      clearInterval(scanTimer);
      hub.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await Promise.all([closed, diagnosis.stop()]);
    },
  };
}
