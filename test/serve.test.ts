/**
 * `probe serve` without a browser: discovery (nested runs, runs that appear later, rank
 * directories and links out of the folder left out), the JSON API over the library, the
 * event stream of a run recorded in a child (series deltas from new rows only, findings,
 * the badge when the writer is killed), and the refusals: paths, methods, hosts, keys.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { RunReader } from '../ts/index.js';
import { DiagnosisQueue } from '../ts/serve/diagnosis.js';
import { CONTENT_SECURITY_POLICY } from '../ts/serve/http.js';
import { RunEntry } from '../ts/serve/run-entry.js';
import { runKey } from '../ts/serve/run-index.js';
import { startServe } from '../ts/serve/server.js';
import type { Serving } from '../ts/serve/server.js';
import { freshTempDir, spawnChild, waitForExit } from './helpers/child.js';
import type { RunningChild } from './helpers/child.js';
import { cleanupTempDirs } from './helpers/fixtures.js';
import { HOSTILE_TEXT } from './helpers/report-runs.js';
import { interopPython, runPython } from './helpers/python.js';
import { HOSTILE_ID, makeServeFleet } from './helpers/serve-runs.js';
import type { ServeFleet } from './helpers/serve-runs.js';
import { realpathSync } from 'node:fs';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw GET (or another method): the path is sent as written, never normalised. */
function get(port: number, rawPath: string, options: { method?: string; host?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: rawPath, method: options.method ?? 'GET', headers: { Host: options.host ?? `127.0.0.1:${port}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function getJson(port: number, p: string): Promise<any> {
  const a = await get(port, p);
  assert.equal(a.status, 200, `${p}: ${a.body}`);
  return JSON.parse(a.body);
}

interface StreamEvent {
  event: string;
  data: any;
  at: number;
}

/** An event-stream client: every event with when it arrived. */
function openStream(port: number, runs: string[]): { events: StreamEvent[]; close: () => void; waitFor: (pred: (e: StreamEvent) => boolean, timeoutMs: number, what: string) => Promise<StreamEvent> } {
  const events: StreamEvent[] = [];
  let buffer = '';
  const req = request({ host: '127.0.0.1', port, path: `/api/stream?runs=${runs.join(',')}`, headers: { Host: `127.0.0.1:${port}` } }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (text: string) => {
      buffer += text;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) events.push({ event, data: JSON.parse(data), at: Date.now() });
      }
    });
  });
  req.on('error', () => undefined);
  req.end();
  const waitFor = async (pred: (e: StreamEvent) => boolean, timeoutMs: number, what: string) => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hit = events.find(pred);
      if (hit) return hit;
      if (Date.now() > until) throw new Error(`no ${what} within ${timeoutMs} ms; events: ${events.map((e) => e.event).join(' ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { events, close: () => req.destroy(), waitFor };
}

after(cleanupTempDirs);

const keyOf = (dir: string) => runKey(realpathSync(dir));

describe('probe serve over a folder of runs', () => {
  let fleet: ServeFleet;
  let serving: Serving;
  let runs: any[];

  before(async () => {
    fleet = await makeServeFleet();
    serving = await startServe({ roots: [fleet.root], port: 0, pollMs: 200, rescanMs: 300 });
    await serving.ctx.diagnosis.idle();
    runs = (await getJson(serving.port, '/api/runs')).runs;
  });
  after(async () => {
    await serving?.close();
  });

  test('finds nested runs, not a rank directory inside a run, nor a run behind a link out of the folder', () => {
    const paths = runs.map((r) => r.path).sort();
    assert.deepEqual(paths, ['runs/deep/x/y/trial-run', `runs/${path.basename(fleet.runs.hostile)}`, 'runs/sweep/a-healthy', 'runs/sweep/b-collapse'].sort());
    assert.ok(runs.every((r) => r.status.badge === 'closed'), JSON.stringify(runs.map((r) => r.status)));
    const collapse = runs.find((r) => r.id === 'b-collapse');
    assert.equal(collapse.key, keyOf(fleet.runs.collapse));
    assert.deepEqual([collapse.rows, collapse.first_step, collapse.last_step, collapse.algorithm, collapse.model], [300, 0, 299, 'ppo', 'llama-1b']);
    assert.equal(collapse.findings.critical, 1, JSON.stringify(collapse.findings));
    assert.equal(runs.find((r) => r.id === 'a-healthy').findings.critical + runs.find((r) => r.id === 'a-healthy').findings.warn, 0);
  });

  test('one run: its info, chart points, findings with evidence, samples by the probe samples filters', async () => {
    const key = keyOf(fleet.runs.collapse);
    const info = await getJson(serving.port, `/api/runs/${key}`);
    assert.equal(info.manifest.run_id, 'b-collapse');
    assert.ok(info.columns.some((c: any) => c.name === 'entropy_mean'));
    const charts = await getJson(serving.port, `/api/runs/${key}/charts`);
    assert.equal(charts.points.rows, 300);
    const checkpoint = (await getJson(serving.port, `/api/runs/${keyOf(fleet.runs.healthy)}/charts`)).marks;
    assert.deepEqual(checkpoint.map((e: any) => [e.kind, e.step]), [['checkpoint', 200]], 'events drawn on the charts');
    // the same points the report's downsampling keeps: 300 rows below 2 × buckets stay whole
    const entropy = RunReader.open(fleet.runs.collapse).view(['entropy_mean']).series('entropy_mean');
    assert.equal(charts.points.series.entropy_mean.length, 300);
    assert.ok(Math.abs(charts.points.series.entropy_mean[299] - entropy[299]) < 1e-5 * Math.abs(entropy[299]));
    // a zoom: the rows of a step range at full resolution, or min/max buckets of `points`
    const zoom = await getJson(serving.port, `/api/runs/${key}/series?columns=entropy_mean&from=100&to=140&bands=reward_mean:reward_std`);
    assert.deepEqual(zoom.x.step, Array.from({ length: 41 }, (_, i) => 100 + i));
    assert.ok(zoom.series.entropy_mean.every((v: number, i: number) => Math.abs(v - entropy[100 + i]) <= 1e-5 * Math.abs(entropy[100 + i])));
    assert.equal(zoom.bands['reward_mean\u0000reward_std'].lo.length, 41);
    // the wall time under each point, exact (six digits would blur it to a quarter of an hour)
    const stamps = RunReader.open(fleet.runs.collapse).stepTable(['step', 'timestamp']).columns.find((c) => c.name === 'timestamp')!.values;
    assert.deepEqual(zoom.x.time, Array.from(stamps.subarray(100, 141)));
    const coarse = await getJson(serving.port, `/api/runs/${key}/series?columns=entropy_mean&from=0&to=299&points=20`);
    assert.equal(coarse.x.step.length, 20);
    assert.equal(Math.min(...coarse.series.entropy_mean), Math.min(...Array.from(entropy, (v) => Number(v.toPrecision(6)))));
    for (const q of ['columns=nope&from=0&to=1', 'columns=entropy_mean&from=x&to=1', 'columns=entropy_mean&from=5&to=1', 'columns=entropy_mean&from=0&to=1&points=5', 'from=0&to=1']) {
      const a = await get(serving.port, `/api/runs/${key}/series?${q}`);
      assert.equal(a.status, 400, `${q}: ${a.body}`);
    }
    const findings = await getJson(serving.port, `/api/runs/${key}/findings`);
    const f = findings.findings.find((x: any) => x.code === 'ENTROPY_COLLAPSE');
    assert.ok(f, JSON.stringify(findings));
    assert.equal(f.source, 'diagnosis');
    const detail = await getJson(serving.port, `/api/runs/${key}/findings/ENTROPY_COLLAPSE`);
    assert.equal(detail.finding.onset_step, f.onset_step);
    assert.ok(Array.isArray(detail.samples));
    const all = await getJson(serving.port, `/api/runs/${key}/samples?steps=10..19`);
    // 12 samples a step, 8 kept: top 2, bottom 2, 4 at random
    assert.equal(all.samples.length, 80);
    const top = await getJson(serving.port, `/api/runs/${key}/samples?steps=10..19&reason=top_k`);
    assert.equal(top.samples.length, 20);
    assert.ok(top.samples.every((s: any) => s.capture_reason === 'top_k'));
    const around = await getJson(serving.port, `/api/runs/${key}/samples?around_finding=ENTROPY_COLLAPSE`);
    assert.ok(around.samples.every((s: any) => s.step >= f.onset_step && s.step <= f.last_step));
    const bad = await get(serving.port, `/api/runs/${key}/samples?steps=9..x`);
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.body).error, /invalid steps "9\.\.x"/);
    const unknown = await get(serving.port, `/api/runs/${key}/samples?around_finding=NOPE`);
    assert.equal(unknown.status, 400);
  });

  test('a sample in full with its trial and its rollout span tree; a span with its trial', async () => {
    const key = keyOf(fleet.runs.trial);
    const d = await getJson(serving.port, `/api/runs/${key}/sample?step=3&id=s-17`);
    assert.equal(d.sample.completion_text, 'hello world');
    assert.equal(d.trial.sample_id, 's-17');
    assert.equal(d.trial.outcome, 'finished');
    assert.ok(d.tree, 'the rollout of the trial captured for the sample');
    assert.equal(d.tree.root.span.kind, 'rollout');
    const turn = d.tree.root.children[0];
    assert.ok(turn, JSON.stringify(d.tree.root));
    const span = await getJson(serving.port, `/api/runs/${key}/spans/${encodeURIComponent(turn.span.span_id)}`);
    assert.equal(span.span.span_id, turn.span.span_id);
    assert.equal(span.trial.capture_key, d.trial.capture_key);
    assert.equal((await get(serving.port, `/api/runs/${key}/sample?step=3&id=nope`)).status, 404);
    for (const q of ['id=s-17', 'step=&id=s-17', 'step=1e2&id=s-17', 'step=0x3&id=s-17', 'step=3&id=s-17&rank=', 'step=3&id=s-17&rank=-1', 'step=3']) {
      const a = await get(serving.port, `/api/runs/${key}/sample?${q}`);
      assert.equal(a.status, 400, `${q}: ${a.body}`);
      assert.match(JSON.parse(a.body).error, /^invalid (step|rank|id) /, q);
    }
    assert.equal((await get(serving.port, `/api/runs/${key}/spans/nope`)).status, 404);
  });

  test('a hostile run answers its names and texts as data, byte for byte', async () => {
    const key = keyOf(fleet.runs.hostile);
    const row = runs.find((r) => r.key === key);
    assert.equal(row.id, HOSTILE_ID);
    const s = await getJson(serving.port, `/api/runs/${key}/samples?step=5`);
    assert.ok(s.samples.length > 0);
    assert.ok(s.samples.every((x: any) => x.completion_text === HOSTILE_TEXT));
  });

  test('the run list reports the counts of the server itself: diagnoses, charts, streams', async () => {
    const list = await getJson(serving.port, '/api/runs');
    assert.deepEqual(list.server.diagnoses, { run: 4, failed: 0, reused: 0 });
    assert.ok(list.server.charts.builds >= 1, JSON.stringify(list.server));
    assert.deepEqual(Object.keys(list.server.streams).sort(), ['dropped', 'open', 'sent']);
  });

  test('the diff of two runs: probe diff, with the findings of the server diagnoses', async () => {
    const d = await getJson(serving.port, `/api/diff?a=${keyOf(fleet.runs.healthy)}&b=${keyOf(fleet.runs.collapse)}`);
    assert.ok(d.metrics.length > 5);
    assert.ok(d.metrics.some((m: any) => m.metric === 'entropy_mean' && m.divergence !== null));
    assert.deepEqual(d.run.map((c: any) => c.path).sort(), ['algorithm', 'model_name']);
    // the findings are the server's own diagnoses of both runs, not a third and fourth beside the queue
    assert.deepEqual(serving.ctx.diagnosis.counts, { run: 4, failed: 0, reused: 2 });
    const codes = async (run: string) => ((await getJson(serving.port, `/api/runs/${keyOf(run)}/findings`)).findings as any[]).map((f) => f.code);
    const inHealthy = new Set(await codes(fleet.runs.healthy));
    const onlyInCollapse = (await codes(fleet.runs.collapse)).filter((c) => !inHealthy.has(c));
    assert.ok(onlyInCollapse.includes('ENTROPY_COLLAPSE'));
    assert.deepEqual(d.findings.only_in_b.map((f: any) => f.code).sort(), onlyInCollapse.sort());
  });

  test('refuses traversal and encoded separators before decoding, other methods, other hosts and unknown keys; every answer carries the CSP', async () => {
    const port = serving.port;
    for (const p of ['/assets/../package.json', '/assets/%2e%2e/package.json', '/assets/%2E%2E%2Fpackage.json', '/assets/..%2fpackage.json', '/assets/%5c..%5cpackage.json', '/assets/a%00b', '/assets/%252e%252e/package.json', '/api/runs/..', '/assets\\..\\package.json']) {
      const a = await get(port, p);
      assert.equal(a.status, 400, `${p}: ${a.body}`);
      assert.doesNotMatch(a.body, /"name": "rlprobe"|devDependencies/, p);
    }
    assert.equal((await get(port, '/assets/package.json')).status, 404);
    assert.equal((await get(port, '/api/runs/0123456789abcdef')).status, 404);
    assert.equal((await get(port, '/api/runs/not-a-key')).status, 404);
    assert.equal((await get(port, `/api/runs/${keyOf(fleet.runs.outside)}`)).status, 404, 'the run behind the link is not served');
    const post = await get(port, '/api/runs', { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
    assert.equal((await get(port, '/api/runs', { method: 'DELETE' })).status, 405);
    assert.equal((await get(port, '/api/runs', { host: 'attacker.example:80' })).status, 421);
    assert.equal((await get(port, '/api/runs', { host: `localhost:${port}` })).status, 200);
    for (const p of ['/', '/assets/app.js', '/api/runs', '/nope']) {
      const a = await get(port, p);
      assert.equal(a.headers['content-security-policy'], CONTENT_SECURITY_POLICY, p);
      assert.equal(a.headers['x-content-type-options'], 'nosniff', p);
    }
    const page = await get(port, '/');
    assert.doesNotMatch(page.body, /<script>|<style|\sstyle=|\son[a-z]+=/i, 'the shell has no inline script or style');
  });
});

describe('probe serve and symbolic links out of the folder', () => {
  test('a run with a link out of the folder anywhere in it is not served, and the list says why; a link inside the folder is', { timeout: 60_000 }, async () => {
    const { mkdirSync, symlinkSync } = await import('node:fs');
    const { Recorder } = await import('../ts/index.js');
    const tmp = freshTempDir('serve-links');
    const root = path.join(tmp.dir, 'runs');
    const outside = path.join(tmp.dir, 'private');
    const make = (dir: string) => {
      const rec = new Recorder(dir, { installHandlers: false, captureEnvironment: false });
      for (let step = 0; step < 3; step++) rec.logStep({ step, loss: 1 });
      rec.logSamples([{ sample_id: 's', completion_text: 'secret' }], { step: 0, select: false });
      rec.close();
    };
    make(outside);
    make(path.join(root, 'ok'));
    make(path.join(root, 'samples-out'));
    const { rmSync } = await import('node:fs');
    rmSync(path.join(root, 'samples-out', 'samples'), { recursive: true });
    symlinkSync(path.join(outside, 'samples'), path.join(root, 'samples-out', 'samples'));
    mkdirSync(path.join(root, 'manifest-out'));
    symlinkSync(path.join(outside, 'manifest.json'), path.join(root, 'manifest-out', 'manifest.json'));
    // inside the folder: a link to another run's samples is read through, and allowed
    make(path.join(root, 'linked-in'));
    rmSync(path.join(root, 'linked-in', 'samples'), { recursive: true });
    symlinkSync(path.join(root, 'ok', 'samples'), path.join(root, 'linked-in', 'samples'));
    const serving = await startServe({ roots: [root], port: 0 });
    try {
      const list = await getJson(serving.port, '/api/runs');
      assert.deepEqual(list.runs.map((r: any) => r.path).sort(), ['runs/linked-in', 'runs/ok']);
      const reasons = list.not_searched.map((n: any) => `${path.basename(n.path)}: ${n.reason}`).join('\n');
      assert.match(reasons, /samples-out: not served: samples is a symbolic link out of the folder/);
      assert.match(reasons, /manifest-out: not served: manifest\.json is a symbolic link out of the folder/);
    } finally {
      await serving.close();
      tmp.cleanup();
    }
  });

  test('on a loopback address of its own, the Host may name it', async () => {
    const tmp = freshTempDir('serve-host');
    const serving = await startServe({ roots: [tmp.dir], port: 0, host: '127.0.0.2' }).catch((e: Error) => e);
    if (serving instanceof Error) {
      tmp.cleanup();
      return; // this machine has no 127.0.0.2
    }
    try {
      const ask = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const req = request({ host: '127.0.0.2', port: serving.port, path: '/api/runs', headers: { Host: host } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        });
      assert.equal(await ask(`127.0.0.2:${serving.port}`), 200);
      assert.equal(await ask(`localhost:${serving.port}`), 200);
      assert.equal(await ask(`127.0.0.2:${serving.port + 1}`), 421);
      assert.equal(await ask('127.0.0.2'), 421, 'no port: only on port 80');
    } finally {
      await serving.close();
      tmp.cleanup();
    }
  });

  test('a stream whose page stopped reading is let go, not buffered without end', async () => {
    const { EventHub } = await import('../ts/serve/sse.js');
    const hub = new EventHub(JSON.stringify);
    let destroyed = false;
    let written = 0;
    const res = {
      writableLength: 0,
      writeHead: () => undefined,
      write: (chunk: string) => {
        written += chunk.length;
        res.writableLength += chunk.length;
        return false;
      },
      on: () => undefined,
      destroy: () => {
        destroyed = true;
      },
      end: () => undefined,
    };
    hub.open(res as never, new Set(['k']), {});
    const big = 'x'.repeat(1 << 20);
    for (let i = 0; i < 10; i++) hub.send('series', { big }, 'k');
    assert.equal(destroyed, true);
    assert.equal(hub.dropped, 1);
    assert.equal(hub.size, 0);
    assert.ok(written < 6 << 20, `${written} bytes buffered`);
    hub.close();
  });
});

describe('probe serve on a run being recorded', () => {
  let tmp: { dir: string; cleanup: () => void };
  let serving: Serving | null = null;
  let child: RunningChild | null = null;

  before(() => {
    tmp = freshTempDir('serve-live');
  });
  after(async () => {
    if (child && child.proc.exitCode === null && child.proc.signalCode === null) {
      child.proc.kill('SIGKILL');
      await waitForExit(child);
    }
    await serving?.close();
    tmp.cleanup();
  });

  test('a run that starts later appears; its chart grows from new rows only, within 2 s of a part; a finding arrives; killed, it reads as ended without close', { timeout: 180_000 }, async () => {
    const root = path.join(tmp.dir, 'runs');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(root);
    serving = await startServe({ roots: [root], port: 0, pollMs: 200, rescanMs: 300 });
    const listed = openStream(serving.port, []);
    const runDir = path.join(root, 'exp', 'live');
    child = spawnChild('serve-live-writer.ts', [runDir, '600', '--chunk', '20', '--pause', '250', '--collapse-at', '150', '--hang']);
    const added = await listed.waitFor((e) => e.event === 'runs' && (e.data.added ?? []).length > 0, 30_000, 'a runs event adding the new run');
    const key = added.data.added[0].key;
    assert.equal(added.data.added[0].path, 'runs/exp/live');
    listed.close();

    // the page's order: the stream first, then the snapshot
    const stream = openStream(serving.port, [key]);
    await stream.waitFor((e) => e.event === 'hello', 10_000, 'hello');
    const snapshot = await getJson(serving.port, `/api/runs/${key}/charts`);
    const reads = { whole: 0, tail: 0 };
    const whole = RunReader.prototype.stepTable;
    const tail = RunReader.prototype.stepTableFrom;
    RunReader.prototype.stepTable = function (this: RunReader, ...a: Parameters<typeof whole>) {
      reads.whole++;
      return whole.apply(this, a);
    };
    RunReader.prototype.stepTableFrom = function (this: RunReader, ...a: Parameters<typeof tail>) {
      reads.tail++;
      return tail.apply(this, a);
    };
    try {
      // each published chunk reaches the stream as a series delta within 2 s
      const latencies: number[] = [];
      let from = child.lines.length;
      for (let k = 0; k < 5; k++) {
        const line = await child.waitForLine(/^flushed \d+ \d+$/, 30_000, from);
        from = child.lines.indexOf(line) + 1;
        const [, n, at] = line.split(' ').map(Number);
        if (n <= snapshot.points.rows) continue;
        const e = await stream.waitFor((x) => x.event === 'series' && x.data.rows >= n, 10_000, `a series delta with ${n} rows`);
        latencies.push(e.at - at);
      }
      assert.ok(latencies.length >= 3, `deltas seen: ${latencies.length}`);
      for (const ms of latencies) assert.ok(ms < 2000, `published → delta took ${ms} ms (${latencies.join(', ')})`);
      // deltas carry points from the last bucket on, not the whole chart
      const deltas = stream.events.filter((e) => e.event === 'series');
      assert.ok(deltas.some((e) => e.data.from > 0), 'some delta starts after the first point');
      // while it grew, no whole read of the steps: only tails
      assert.equal(reads.whole, 0, `whole step reads while following: ${reads.whole}`);
      assert.ok(reads.tail >= latencies.length, `tail reads: ${reads.tail}`);
    } finally {
      RunReader.prototype.stepTable = whole;
      RunReader.prototype.stepTableFrom = tail;
    }
    const finding = await stream.waitFor((e) => e.event === 'findings' && e.data.run === key && e.data.findings.some((f: any) => f.code === 'ENTROPY_COLLAPSE'), 90_000, 'an ENTROPY_COLLAPSE finding');
    assert.ok(finding.data.findings.find((f: any) => f.code === 'ENTROPY_COLLAPSE').onset_step >= 140);
    const live = await getJson(serving.port, '/api/runs');
    assert.equal(live.runs[0].status.badge, 'live', JSON.stringify(live.runs[0].status));
    child.proc.kill('SIGKILL');
    await waitForExit(child);
    const ended = openStream(serving.port, [key]);
    await ended.waitFor((e) => e.event === 'runs' && (e.data.changed ?? []).some((r: any) => r.key === key && r.status.badge === 'ended without close'), 15_000, 'the badge ended without close');
    ended.close();
    stream.close();
  });
});

describe('probe serve when looking at one run fails', () => {
  test('the other runs are still looked at, and the failing one shows its error', { timeout: 60_000 }, async () => {
    const { RunEntry } = await import('../ts/serve/run-entry.js');
    const { Recorder } = await import('../ts/index.js');
    const tmp = freshTempDir('serve-failing-look');
    const bad = path.join(tmp.dir, 'a-bad');
    const good = path.join(tmp.dir, 'b-good');
    for (const dir of [bad, good]) new Recorder(dir, { installHandlers: false, captureEnvironment: false, flushIntervalMs: 3_600_000 }).close();
    const rec = new Recorder(good, { installHandlers: false, captureEnvironment: false, flushIntervalMs: 3_600_000 });
    const poll = RunEntry.prototype.poll;
    RunEntry.prototype.poll = function (this: InstanceType<typeof RunEntry>) {
      if (this.dir === realpathSync(bad)) throw new RangeError('Invalid time value');
      return poll.call(this);
    };
    let serving: Serving | null = null;
    try {
      serving = await startServe({ roots: [tmp.dir], port: 0, pollMs: 100, rescanMs: 200 });
      for (let step = 0; step < 5; step++) rec.logStep({ step, loss: 1 });
      assert.ok(rec.flushSync(10_000));
      const until = Date.now() + 20_000;
      let rows: any[] = [];
      while (Date.now() < until) {
        rows = (await getJson(serving.port, '/api/runs')).runs;
        if (rows.find((r) => r.path.endsWith('b-good'))?.rows === 5) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(rows.find((r) => r.path.endsWith('b-good'))?.rows, 5, JSON.stringify(rows));
      assert.match(rows.find((r) => r.path.endsWith('a-bad'))?.error ?? '', /Invalid time value/);
    } finally {
      RunEntry.prototype.poll = poll;
      rec.close();
      await serving?.close();
      tmp.cleanup();
    }
  });
});

describe("probe serve and a foreign writer's finding events", () => {
  test('a finding event is checked field by field: one that is not a finding is dropped, texts and lists are bounded', { timeout: 60_000 }, async () => {
    const { appendFileSync } = await import('node:fs');
    const { Recorder } = await import('../ts/index.js');
    const tmp = freshTempDir('serve-foreign-findings');
    const dir = path.join(tmp.dir, 'run');
    const rec = new Recorder(dir, { installHandlers: false, captureEnvironment: false });
    for (let step = 0; step < 5; step++) rec.logStep({ step, loss: 1 });
    rec.close();
    const event = (data: unknown) => `${JSON.stringify({ timestamp: 1, kind: 'finding', step: 3, rank: 0, message: 'm', data })}\n`;
    const good = { code: 'KL_BLOWUP', severity: 'warn', onset_step: 2, last_step: 4, confidence: 0.8, message: 'x'.repeat(100_000), remedy: 'r', evidence: { a: 1, b: 'two' }, samples: [{ step: 3, sample_id: 's', why: 'w' }, 7] };
    appendFileSync(path.join(dir, 'events.jsonl'), event(good) + event({ code: 'NO_SEVERITY', onset_step: 1, last_step: 2, confidence: 1 }) + event({ code: 'BAD', severity: 'fatal', onset_step: 1, last_step: 2, confidence: 1 }) + event('not an object'));
    const serving = await startServe({ roots: [tmp.dir], port: 0, diagnose: false });
    try {
      const key = (await getJson(serving.port, '/api/runs')).runs[0].key;
      const f = await getJson(serving.port, `/api/runs/${key}/findings`);
      assert.deepEqual(f.findings.map((x: any) => x.code), ['KL_BLOWUP']);
      const k = f.findings[0];
      assert.ok(k.message.length <= 4001, `message of ${k.message.length} characters kept`);
      assert.deepEqual(k.columns, []);
      assert.deepEqual(k.evidence, { a: 1 });
      assert.deepEqual(k.samples, [{ step: 3, sample_id: 's', why: 'w' }]);
      assert.equal(k.source, 'live doctor');
    } finally {
      await serving.close();
      tmp.cleanup();
    }
  });
});

describe('the diff view under --no-diagnose', () => {
  test('diagnoses both runs through the queue, one at a time, hands them to the diff alone and reuses them while the runs stand still', { timeout: 120_000 }, async () => {
    const fleet = await makeServeFleet();
    const serving = await startServe({ roots: [fleet.root], port: 0, pollMs: 200, rescanMs: 300, diagnose: false });
    try {
      const a = keyOf(fleet.runs.healthy);
      const b = keyOf(fleet.runs.collapse);
      const [d1, d2] = await Promise.all([getJson(serving.port, `/api/diff?a=${a}&b=${b}`), getJson(serving.port, `/api/diff?a=${b}&b=${a}`)]);
      // two diffs at once: each run diagnosed once (the second diff waits on the first's
      // diagnoses, or reuses one already done: that depends on when its request lands)
      const first = { ...serving.ctx.diagnosis.counts };
      assert.deepEqual([first.run, first.failed], [2, 0], JSON.stringify(first));
      assert.ok(d1.findings.only_in_b.some((f: any) => f.code === 'ENTROPY_COLLAPSE'), JSON.stringify(d1.findings));
      assert.deepEqual(d2.findings.only_in_a, d1.findings.only_in_b);
      const again = await getJson(serving.port, `/api/diff?a=${a}&b=${b}`);
      assert.deepEqual(again.findings, d1.findings);
      assert.deepEqual(serving.ctx.diagnosis.counts, { run: 2, failed: 0, reused: first.reused + 2 });
      // --no-diagnose: the run list still shows no diagnosis of the server's
      const rows = (await getJson(serving.port, '/api/runs')).runs;
      assert.ok(rows.every((r: any) => r.diagnosis === 'none'), JSON.stringify(rows.map((r: any) => r.diagnosis)));
    } finally {
      await serving.close();
    }
  });
});

describe('the diagnosis queue and the callers waiting on it', () => {
  let fleet: ServeFleet;
  before(async () => {
    fleet = await makeServeFleet();
  });
  const entryAt = (dir: string) => {
    const e = new RunEntry(keyOf(dir), dir, path.basename(dir));
    e.poll();
    assert.equal(e.error, null);
    return e;
  };
  /** `p`, or a failure naming `what` after 60 s: a caller left waiting is the defect. */
  const settled = <T>(p: Promise<T>, what: string) =>
    Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: still waiting after 60 s`)), 60_000).unref())]);

  test('a caller whose run lost rows before its turn (rewritten) is answered by that diagnosis, not left waiting', { timeout: 120_000 }, async () => {
    const q = new DiagnosisQueue(() => {}, 0, false);
    const busy = q.findings(entryAt(fleet.runs.healthy));
    const run = entryAt(fleet.runs.collapse);
    const asked = q.findings(run);
    run.rows = 100;
    const found = await settled(asked, 'the caller of the rewritten run');
    assert.ok(found.some((f) => f.code === 'ENTROPY_COLLAPSE'));
    await busy;
    await q.idle();
    assert.deepEqual(q.counts, { run: 2, failed: 0, reused: 0 });
  });

  test('a caller who saw the run end during its diagnosis gets the next one, and that one serves someone', { timeout: 120_000 }, async () => {
    const q = new DiagnosisQueue(() => {}, 0, false);
    const run = entryAt(fleet.runs.collapse);
    run.badge = 'live';
    const first = q.findings(run).then(() => q.counts.run);
    run.badge = 'closed';
    const second = q.findings(run).then(() => q.counts.run);
    assert.equal(await settled(first, 'the first caller'), 1);
    assert.equal(await settled(second, 'the caller who saw the end'), 2, 'answered by the diagnosis of the ended run');
    await q.idle();
    assert.deepEqual(q.counts, { run: 2, failed: 0, reused: 0 });
    // the ended run, diagnosed since: answered from it
    await q.findings(run);
    assert.equal(q.counts.reused, 1);
  });

  test('callers are let go with an error when their run is removed or the server stops, never left waiting', { timeout: 120_000 }, async () => {
    const q = new DiagnosisQueue(() => {}, 0, false);
    const busy = q.findings(entryAt(fleet.runs.healthy));
    const removed = entryAt(fleet.runs.collapse);
    const waiting = q.findings(removed);
    q.forget(removed.key);
    await assert.rejects(settled(waiting, 'the caller of a removed run'), /the run was removed/);
    const trial = q.findings(entryAt(fleet.runs.trial));
    const stopping = q.stop();
    await assert.rejects(settled(trial, 'the caller when the server stops'), /the server is stopping/);
    // the diagnosis in flight is let finish, and answers its caller
    assert.ok(Array.isArray(await settled(busy, 'the caller of the diagnosis in flight')));
    await stopping;
    await assert.rejects(q.findings(entryAt(fleet.runs.healthy)), /the server is stopping/);
  });
});

describe('probe serve and a recorder with the live doctor', () => {
  test("the live doctor's finding events reach the page on the next look, without a diagnosis of the server's", { timeout: 180_000 }, async () => {
    const tmp = freshTempDir('serve-live-doctor');
    const root = path.join(tmp.dir, 'runs');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(root);
    const serving = await startServe({ roots: [root], port: 0, pollMs: 200, rescanMs: 300, diagnose: false });
    const child = spawnChild('serve-live-writer.ts', [path.join(root, 'live'), '400', '--chunk', '20', '--pause', '150', '--collapse-at', '100', '--live-doctor', '--hang']);
    const stream = openStream(serving.port, []);
    try {
      const e = await stream.waitFor((x) => x.event === 'findings' && x.data.findings.some((f: any) => f.code === 'ENTROPY_COLLAPSE'), 120_000, 'a finding from the live doctor');
      const f = e.data.findings.find((x: any) => x.code === 'ENTROPY_COLLAPSE');
      assert.equal(f.source, 'live doctor');
      assert.equal(e.data.state, 'none', 'the server diagnosed nothing itself');
      assert.equal(serving.ctx.diagnosis.counts.run, 0);
      const detail = await getJson(serving.port, `/api/runs/${e.data.run}/findings/ENTROPY_COLLAPSE`);
      assert.equal(detail.finding.onset_step, f.onset_step);
    } finally {
      stream.close();
      child.proc.kill('SIGKILL');
      await waitForExit(child);
      await serving.close();
      tmp.cleanup();
    }
  });
});

describe('probe serve on runs recorded by Python rlprobe', () => {
  const py = interopPython();
  test('a Python run is listed, closed once compacted, its charts and samples read', { skip: 'skip' in py ? py.skip : false, timeout: 120_000 }, async () => {
    if ('skip' in py) return;
    const tmp = freshTempDir('serve-python');
    const serving = await startServe({ roots: [tmp.dir], port: 0, pollMs: 200, rescanMs: 300 });
    try {
      const dir = path.join(tmp.dir, 'py', 'run');
      const expected = runPython(py.python, 'py_write_run.py', [dir]) as { steps: unknown[] };
      let row: any;
      for (let i = 0; i < 100 && !(row?.rows > 0 && row.status.badge === 'closed'); i++) {
        await new Promise((r) => setTimeout(r, 100));
        row = (await getJson(serving.port, '/api/runs')).runs[0];
      }
      assert.equal(row.id, 'py-interop');
      assert.equal(row.rows, expected.steps.length);
      assert.equal(row.status.badge, 'closed', JSON.stringify(row.status));
      const charts = await getJson(serving.port, `/api/runs/${row.key}/charts`);
      assert.equal(charts.points.rows, expected.steps.length);
      assert.ok(charts.specs.length > 0);
    } finally {
      await serving.close();
      tmp.cleanup();
    }
  });
});
