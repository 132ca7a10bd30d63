/**
 * Finds the trajectories of a captured trial and plans their spans. One trajectory per agent
 * directory: `agent/trajectory.json` (or, for multi-step trials, each
 * `steps/<name>/agent/trajectory.json`), read from the capture's own copy of the files, so
 * capture, delivery and a later `probe trial expand` see the same bytes. References inside
 * a trajectory (subagents, continuations) load only files the ledger collected: never a
 * symbolic link, never a path outside the trial.
 */
import { readFileSync } from 'node:fs';

import { parsePythonJson } from '../files/python-json.js';
import type { LedgerEntry } from './ledger.js';
import type { TrajectoryRecord } from './manifest.js';
import { hostPath, isCleanRelative, safeRelative } from './safe-path.js';
import { planTrajectory } from './trajectory/plan.js';
import type { TrajectoryPlan } from './trajectory/plan.js';

export interface PlannedTrajectory {
  record: TrajectoryRecord;
  plan: TrajectoryPlan | null;
}

const MAX_WARNINGS = 20;

/** The multi-step step a trial-relative path belongs to (`steps/<name>/…`), or null. */
export function trialStepOf(rel: string): string | null {
  return /^steps\/([^/]+)\//.exec(rel)?.[1] ?? null;
}

/**
 * The trajectory files to expand: `chosen` when given (a capture's recorded choice), else
 * one per agent directory (`` and `steps/<name>/`): its `trajectory.json`, else the first
 * `trajectory*.json`.
 */
export function trajectoryFiles(collected: ReadonlySet<string>, chosen?: readonly string[]): { path: string; trialStep: string | null }[] {
  if (chosen !== undefined) return chosen.map((p) => ({ path: p, trialStep: trialStepOf(p) }));
  const byDir = new Map<string, string[]>();
  for (const p of collected) {
    const m = /^((?:steps\/[^/]+\/)?)agent\/(trajectory(?:\.[^/]*)?\.json)$/.exec(p);
    if (!m) continue;
    const list = byDir.get(m[1]) ?? [];
    list.push(p);
    byDir.set(m[1], list);
  }
  const out: { path: string; trialStep: string | null }[] = [];
  for (const [prefix, list] of [...byDir].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const main = `${prefix}agent/trajectory.json`;
    const chosen = list.includes(main) ? main : list.sort()[0];
    out.push({ path: chosen, trialStep: prefix === '' ? null : prefix.slice('steps/'.length, -1) });
  }
  return out;
}

function emptyRecord(path: string, trialStep: string | null): TrajectoryRecord {
  return {
    path,
    trial_step: trialStep,
    status: 'raw',
    format: null,
    parser: null,
    reason: null,
    turns: 0,
    tool_calls: 0,
    subtrajectories: 0,
    prompt_tokens: null,
    completion_tokens: null,
    cached_tokens: null,
    cost_usd: null,
    session_id: null,
    referenced_files: [],
    spans_cut: 0,
    warnings: [],
  };
}

/** The format a document declares (`schema_version`), bounded, or null. */
function declaredFormat(doc: unknown): string | null {
  const v = doc !== null && typeof doc === 'object' ? (doc as { schema_version?: unknown }).schema_version : undefined;
  return typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 100) : null;
}

function readDoc(filesRoot: string, rel: string): { doc: unknown } | { error: string } {
  try {
    return { doc: parsePythonJson(readFileSync(hostPath(filesRoot, rel), 'utf8')) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/**
 * Plans the spans of every trajectory in a capture whose collected files are under
 * `filesRoot`. `spanBudget` is how many planned spans the capture will write: each parser is
 * told what is left of it (`ctx.maxSpans`), so a runaway trajectory is counted, not held.
 */
export function planTrajectories(filesRoot: string, entries: readonly LedgerEntry[], chosen?: readonly string[], spanBudget = Infinity): PlannedTrajectory[] {
  const collected = new Set(entries.filter((e) => e.status === 'collected' && isCleanRelative(e.path)).map((e) => e.path));
  const out: PlannedTrajectory[] = [];
  let left = Math.max(0, spanBudget);
  for (const { path: rel, trialStep } of trajectoryFiles(collected, chosen)) {
    const record = emptyRecord(rel, trialStep);
    if (!collected.has(rel)) {
      record.status = 'unreadable';
      record.reason = `${rel} was not collected`;
      out.push({ record, plan: null });
      continue;
    }
    const read = readDoc(filesRoot, rel);
    if ('error' in read) {
      record.status = 'unreadable';
      record.reason = `not JSON: ${read.error}`;
      out.push({ record, plan: null });
      continue;
    }
    const dir = rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '';
    const load = (relPath: string, fromDir: string) => {
      const safe = safeRelative(relPath, fromDir);
      if (!safe.ok || !collected.has(safe.path)) return undefined;
      const d = readDoc(filesRoot, safe.path);
      return 'error' in d ? undefined : { doc: d.doc, path: safe.path };
    };
    const { plan, parser, errors } = planTrajectory(read.doc, { load, dir, file: rel, ...(Number.isFinite(left) ? { maxSpans: left } : {}) });
    if (plan === null) {
      // keep what the document says it is: an unknown version is worth knowing by name
      record.format = declaredFormat(read.doc);
      const what = record.format === null ? 'its format' : `its format ${JSON.stringify(record.format)}`;
      record.reason = errors.length > 0 ? `no parser recognised ${what} (${errors.join('; ')})` : `no registered parser recognises ${what}: captured raw; \`probe trial expand\` can expand it once a parser is registered`;
      out.push({ record, plan: null });
      continue;
    }
    const s = plan.summary;
    Object.assign(record, {
      status: 'expanded',
      format: plan.format,
      parser,
      turns: s.turns,
      tool_calls: s.toolCalls,
      subtrajectories: s.subtrajectories,
      prompt_tokens: s.promptTokens,
      completion_tokens: s.completionTokens,
      cached_tokens: s.cachedTokens,
      cost_usd: s.costUsd,
      session_id: s.sessionId,
      referenced_files: [...plan.referencedFiles].sort(),
      warnings: [...errors, ...plan.warnings].slice(0, MAX_WARNINGS),
    } satisfies Partial<TrajectoryRecord>);
    left = Math.max(0, left - plan.spans.length);
    out.push({ record, plan });
  }
  return out;
}

/**
 * Cuts the planned spans past `budget` (the capture's span limit less the rollout and
 * trial_step spans), in plan order: a parent comes before its children, so what is kept
 * is a whole tree. A parser told the budget may have kept fewer already and counted the
 * rest (`plan.spansCut`). Each trajectory records how many of its spans were cut and says
 * so first among its warnings. Returns the number cut.
 */
export function cutSpans(trajectories: readonly PlannedTrajectory[], budget: number, limit: number): number {
  let left = Math.max(0, budget);
  let cut = 0;
  for (const t of trajectories) {
    if (t.plan === null) continue;
    const planned = t.plan.spans.length + (t.plan.spansCut ?? 0);
    if (t.plan.spans.length > left) t.plan.spans.length = left;
    const kept = t.plan.spans.length;
    if (planned > kept) {
      t.record.spans_cut = planned - kept;
      t.record.warnings = [`${planned - kept} spans beyond the limit of ${limit} spans per capture were not written (the first ${kept} of this trajectory's ${planned} were)`, ...t.record.warnings].slice(0, MAX_WARNINGS);
      cut += planned - kept;
    }
    left -= kept;
  }
  return cut;
}
