/** A captured trial as the trials and trial tools give it. */
import { z } from 'zod';

import type { TrialCapture } from '../reader/trial-reader.js';
import { cutText, jsonNumberOrNull } from './clip.js';
import { JsonNumberSchema } from './schemas.js';
import { line, num } from './text.js';

/** Characters of an exception message in a listing. */
const MESSAGE_CHARS = 500;

export const ExceptionSchema = z.object({ type: z.string().nullable(), message: z.string().nullable() });

export const TrialItemSchema = z.object({
  capture_key: z.string().describe('Pass it as `capture` to the trial tool'),
  trial_name: z.string(),
  trial_id: z.string().nullable(),
  task_name: z.string().nullable(),
  step: z.number().int(),
  sample_id: z.string().nullable(),
  group_id: z.string().nullable(),
  rank: z.number().int(),
  outcome: z.enum(['finished', 'failed', 'unfinished']).describe('failed: the trial (or one of its steps) raised; unfinished: no result.json'),
  rewards: z.record(z.string(), JsonNumberSchema.nullable()).nullable().describe('The verifier\'s rewards (NaN as null)'),
  exception: ExceptionSchema.nullable().describe('What the trial (or its first failing step) raised; the message cut with a marker'),
  ledger: z.object({ collected: z.number().int(), missing: z.number().int(), skipped: z.number().int(), unknown: z.number().int(), empty: z.number().int(), bytes: z.number() }).describe('Files of the trial directory by collection status, and bytes collected'),
  rollout_span_id: z.string().describe('span_tree with this span_id shows the agent\'s turns and tool calls'),
  spans: z.number().int(),
  spans_cut: z.number().int().describe('Spans of the trajectory past the capture\'s span limit, not written'),
  trajectories: z.array(z.object({ path: z.string(), status: z.string(), format: z.string().nullable(), turns: z.number().int(), tool_calls: z.number().int() })),
});
export type TrialItem = z.infer<typeof TrialItemSchema>;

/** What the trial raised: its own exception, else the first step that failed. */
function raised(t: TrialCapture): z.infer<typeof ExceptionSchema> | null {
  const ex = t.trial.exception ?? (t.trial.step_results ?? []).find((o) => o.exception !== null)?.exception ?? null;
  return ex === null ? null : { type: ex.type, message: ex.message === null ? null : cutText(ex.message, MESSAGE_CHARS) };
}

export function trialItem(t: TrialCapture): TrialItem {
  const exception = raised(t);
  const c = t.ledger.counts;
  return {
    capture_key: t.capture_key,
    trial_name: t.trial.name,
    trial_id: t.trial.id,
    task_name: t.trial.task_name,
    step: t.step,
    sample_id: t.sample_id,
    group_id: t.group_id,
    rank: t.rank,
    outcome: exception !== null ? 'failed' : t.trial.finished ? 'finished' : 'unfinished',
    rewards: t.trial.rewards === null ? null : Object.fromEntries(Object.entries(t.trial.rewards).map(([k, v]) => [k, jsonNumberOrNull(v)])),
    exception,
    ledger: { collected: c.collected, missing: c.missing, skipped: c.skipped, unknown: c.unknown, empty: c.empty, bytes: t.ledger.bytes },
    rollout_span_id: t.spans.rollout_span_id,
    spans: t.spans.count,
    spans_cut: t.spans.cut,
    trajectories: t.trajectories.map((j) => ({ path: j.path, status: j.status, format: j.format, turns: j.turns, tool_calls: j.tool_calls })),
  };
}

export function trialItemText(t: TrialItem): string {
  const rewards = t.rewards ? Object.entries(t.rewards).map(([k, v]) => `${k}=${num(v)}`).join(' ') : 'no reward';
  const ex = t.exception ? `: ${t.exception.type ?? 'exception'}${t.exception.message ? ` ${t.exception.message.split('\n')[0]}` : ''}` : '';
  const ids = [t.sample_id ? `sample ${t.sample_id}` : '', t.group_id ? `group ${t.group_id}` : ''].filter(Boolean).join(' ');
  const l = t.ledger;
  const files = `files ${l.collected} collected${l.missing ? `, ${l.missing} missing` : ''}${l.skipped ? `, ${l.skipped} skipped` : ''}${l.unknown ? `, ${l.unknown} unknown` : ''}`;
  const trajectories = t.trajectories.map((j) => (j.status === 'expanded' ? `${j.format} ${j.turns} turns, ${j.tool_calls} tool calls` : `${j.path} ${j.status}`)).join('; ') || 'no trajectory';
  return [
    line(`step ${t.step}  ${t.capture_key}  ${JSON.stringify(t.trial_name)}  ${t.outcome}${ex}  ${rewards}${ids ? `  [${ids}]` : ''}`),
    line(`    ${files}; ${trajectories}; ${t.spans} spans${t.spans_cut ? ` (${t.spans_cut} cut)` : ''}; rollout span ${t.rollout_span_id}`),
  ].join('\n');
}
