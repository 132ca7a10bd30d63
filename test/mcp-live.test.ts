/**
 * `probe mcp` on a run while it is recorded, and after its writer is SIGKILLed: a child
 * (test/children/mcp-live-writer.ts) records and publishes 20 steps every 100 ms while the
 * SDK client asks list_runs, run_info, diagnose, series, samples and span_tree. The
 * answers grow and agree with each other: a step answered once reads the same later.
 * Killed, the run reads as "ended without a close", every published step still there.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshTempDir, spawnChild, waitForExit } from './helpers/child.js';
import type { RunningChild } from './helpers/child.js';
import { ok, startMcp } from './helpers/mcp-client.js';
import type { McpSession } from './helpers/mcp-client.js';

let tmp: { dir: string; cleanup: () => void };
let child: RunningChild | null = null;
let mcp: McpSession | null = null;

before(() => {
  tmp = freshTempDir('mcp-live');
});

after(async () => {
  await mcp?.close();
  if (child && child.proc.exitCode === null && child.proc.signalCode === null) {
    child.proc.kill('SIGKILL');
    await waitForExit(child);
  }
  tmp.cleanup();
});

/** The steps published so far, from the child's last "flushed <n>" line. */
function published(c: RunningChild): number {
  const last = [...c.lines].reverse().find((l) => /^flushed \d+$/.test(l));
  return last === undefined ? 0 : Number(last.split(' ')[1]);
}

describe('probe mcp on a live run, then a killed one', () => {
  test('answers grow while the run is recorded and agree with each other; killed, it reads as ended without a close', { timeout: 180_000 }, async () => {
    const runDir = path.join(tmp.dir, 'runs', 'live');
    child = spawnChild('mcp-live-writer.ts', [runDir]);
    await child.waitForLine(/^flushed (1[0-9]{2}|[2-9][0-9]{2}|\d{4,})$/, 60_000);
    mcp = await startMcp(tmp.dir, ['--root', 'runs']);

    const list1 = ok(await mcp.call('list_runs', {}), 'list_runs live');
    assert.equal(list1.runs.length, 1);
    const live1 = list1.runs[0];
    assert.equal(live1.path, 'runs/live');
    assert.equal(live1.status.status, 'live', JSON.stringify(live1.status));
    assert.match(live1.status.detail, new RegExp(`being recorded by pid ${child.proc.pid}`));
    assert.ok(live1.steps >= 100, `steps ${live1.steps}`);

    const info1 = ok(await mcp.call('run_info', { run: 'runs/live' }), 'run_info live');
    assert.equal(info1.summary.status.status, 'live');
    ok(await mcp.call('diagnose', { run: 'runs/live' }), 'diagnose live');
    const lastSeen = info1.summary.last_step;
    const series1 = ok(await mcp.call('series', { run: 'runs/live', metrics: ['reward_mean', 'loss'], from_step: 0, to_step: lastSeen, points: 500 }), 'series live');
    const samples1 = ok(await mcp.call('samples', { run: 'runs/live', step: 0 }), 'samples live');
    assert.equal(samples1.samples.length, 4);
    const tree = ok(await mcp.call('span_tree', { run: 'runs/live', sample_id: 's10-0' }), 'span_tree live');
    assert.deepEqual(tree.nodes.map((n: any) => n.kind), ['rollout', 'turn']);
    assert.equal(tree.nodes[1].attributes.message, 'step 10');

    // more steps published: the answers grow, and what was answered before reads the same
    const target = published(child) + 100;
    while (published(child) < target) await child.waitForLine(/^flushed \d+$/, 60_000, child.lines.length);
    const info2 = ok(await mcp.call('run_info', { run: 'runs/live' }), 'run_info later');
    assert.ok(info2.summary.steps >= info1.summary.steps + 100, `steps ${info1.summary.steps} → ${info2.summary.steps}`);
    assert.ok(info2.counts.samples > info1.counts.samples, `samples ${info1.counts.samples} → ${info2.counts.samples}`);
    assert.ok(info2.counts.spans > info1.counts.spans, `spans ${info1.counts.spans} → ${info2.counts.spans}`);
    const series2 = ok(await mcp.call('series', { run: 'runs/live', metrics: ['reward_mean', 'loss'], from_step: 0, to_step: lastSeen, points: 500 }), 'series later');
    assert.deepEqual(series2.series, series1.series, 'the steps answered before read the same');
    const grown = ok(await mcp.call('series', { run: 'runs/live', metrics: ['reward_mean'], points: 500 }), 'series whole');
    assert.ok(grown.rows >= info2.summary.steps && grown.to_step >= info2.summary.last_step, `series rows ${grown.rows} to ${grown.to_step}, run_info ${info2.summary.steps} steps to ${info2.summary.last_step}`);

    // killed: no end recorded, the writer gone
    child.proc.kill('SIGKILL');
    const exit = await waitForExit(child);
    assert.equal(exit.signal, 'SIGKILL');
    const flushed = published(child);
    const list2 = ok(await mcp.call('list_runs', {}), 'list_runs killed');
    const dead = list2.runs[0];
    assert.equal(dead.status.status, 'ended without a close', JSON.stringify(dead.status));
    assert.match(dead.status.detail, new RegExp(`its writer \\(pid ${child.proc.pid}\\) is gone`));
    assert.ok(dead.steps >= flushed, `${dead.steps} steps read, ${flushed} published before the kill`);
    const info3 = ok(await mcp.call('run_info', { run: 'runs/live' }), 'run_info killed');
    assert.equal(info3.summary.status.status, 'ended without a close');
    ok(await mcp.call('diagnose', { run: 'runs/live' }), 'diagnose killed');
    const series3 = ok(await mcp.call('series', { run: 'runs/live', metrics: ['reward_mean', 'loss'], from_step: 0, to_step: lastSeen, points: 500 }), 'series killed');
    assert.deepEqual(series3.series, series1.series, 'the steps answered while live read the same after the kill');
    const resources = await mcp.client.listResources();
    assert.ok(resources.resources.some((r) => r.uri === 'rlprobe://run/runs/live/report.md'));
    const report = await mcp.client.readResource({ uri: 'rlprobe://run/runs/live/report.md' });
    assert.match((report.contents[0] as { text: string }).text, /^# rlprobe report: live/);
  });
});
