/** What the `probe trial …` commands share: parser modules, one-line summaries. */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { RlprobeError } from '../../errors.js';
import type { CaptureManifest } from '../../trials/manifest.js';
import { COLLECTION_STATUSES } from '../../trials/ledger.js';
import type { Ledger, StatusCounts } from '../../trials/ledger.js';
import { registerTrajectoryParser } from '../../trials/trajectory/plan.js';
import type { TrajectoryParser } from '../../trials/trajectory/plan.js';
import { bytes } from '../format.js';

/**
 * Loads user parser modules (`--parser-module`): each may call `registerTrajectoryParser`
 * itself, or export `trajectoryParsers` (or a default export) mapping names to parsers.
 * This runs the user's own code, never anything from a trial.
 */
export async function loadParserModules(modules: readonly string[]): Promise<string[]> {
  const names: string[] = [];
  for (const m of modules) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(path.resolve(m)).href)) as Record<string, unknown>;
    } catch (e) {
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid --parser-module ${JSON.stringify(m)}: ${(e as Error).message}`);
    }
    const table = (mod.trajectoryParsers ?? mod.default) as Record<string, unknown> | undefined;
    if (table && typeof table === 'object') {
      for (const [name, fn] of Object.entries(table)) {
        if (typeof fn !== 'function') continue;
        registerTrajectoryParser(name, fn as TrajectoryParser);
        names.push(name);
      }
    }
  }
  return names;
}

export function rewardText(rewards: Record<string, number | null> | null): string {
  if (!rewards) return 'no reward';
  return Object.entries(rewards)
    .map(([k, v]) => `${k}=${v === null ? 'NaN' : Number(v.toPrecision(6))}`)
    .join(' ');
}

export function ledgerText(l: Pick<Ledger, 'counts' | 'bytes'>): string {
  const c = l.counts;
  const parts = [`${c.collected} collected (${bytes(l.bytes)})`];
  if (c.missing) parts.push(`${c.missing} missing`);
  if (c.skipped) parts.push(`${c.skipped} skipped`);
  if (c.unknown) parts.push(`${c.unknown} unknown`);
  if (c.empty) parts.push(`${c.empty} empty`);
  return parts.join(', ');
}

/** Non-zero counts of one role or reason, in status order: `800 collected, 5 skipped`. */
export function statusCountsText(counts: Partial<StatusCounts>): string {
  return COLLECTION_STATUSES.filter((st) => (counts[st] ?? 0) > 0)
    .map((st) => `${counts[st]} ${st}`)
    .join(', ');
}

export function trajectoryText(m: CaptureManifest): string {
  if (m.trajectories.length === 0) return 'no trajectory';
  return m.trajectories
    .map((t) => {
      const where = t.trial_step ? `${t.trial_step}: ` : '';
      if (t.status !== 'expanded') return `${where}${t.path} captured raw (${t.status === 'raw' && t.format ? t.format : t.status})`;
      const sub = t.subtrajectories ? `, ${t.subtrajectories} sub-trajectories` : '';
      return `${where}${t.format} ${t.turns} turns, ${t.tool_calls} tool calls${sub}`;
    })
    .join('; ');
}

export function statusText(m: CaptureManifest): string {
  const ex = m.trial.exception;
  if (ex) return `FAILED ${ex.type ?? 'exception'}${ex.message ? `: ${ex.message.split('\n')[0].slice(0, 80)}` : ''}`;
  const failed = (m.trial.step_results ?? []).find((o) => o.exception !== null);
  if (failed) return `FAILED in step ${failed.name}: ${failed.exception!.type ?? 'exception'}${failed.exception!.message ? `: ${failed.exception!.message.split('\n')[0].slice(0, 80)}` : ''}`;
  return m.trial.finished ? 'finished' : 'UNFINISHED (no result.json)';
}

/** `25 spans`, or `10 spans (15 cut)` when the capture's span limit cut some. */
export function spansText(m: CaptureManifest): string {
  return `${m.spans.count} spans${m.spans.cut ? ` (${m.spans.cut} cut)` : ''}`;
}

/** One line per capture, as `probe trial capture` and `deliver` print it. */
export function captureLine(m: CaptureManifest, run: string): string {
  return (
    `captured ${JSON.stringify(m.trial.name)} into ${path.join(run, 'trials', m.capture_key)} at step ${m.step}: ` +
    `${statusText(m)}; ${rewardText(m.trial.rewards)}; files ${ledgerText(m.ledger)}; ${trajectoryText(m)}; ${spansText(m)}`
  );
}
