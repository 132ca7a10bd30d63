/** trial: one captured trial in detail. */
import { z } from 'zod';

import { largestFitting } from '../budget.js';
import { clipJson, cutText, jsonNumberOrNull } from '../clip.js';
import { runArg, textArg } from '../args.js';
import { openRun } from '../open-run.js';
import { JsonNumberSchema, JsonValueSchema } from '../schemas.js';
import { block, line, num } from '../text.js';
import { defineTool } from '../tool.js';
import { ToolError } from '../tool-error.js';
import { TrialItemSchema, trialItem, trialItemText } from '../trial-json.js';

/** Ever more detail while it fits: traceback lines, ledger entries, warnings, characters of a text. */
const DETAIL = [
  { traceback: 5, entries: 0, warnings: 3, text: 200 },
  { traceback: 20, entries: 10, warnings: 10, text: 500 },
  { traceback: 60, entries: 40, warnings: 20, text: 1000 },
  { traceback: 200, entries: 200, warnings: 50, text: 2000 },
];

export const trial = defineTool({
  name: 'trial',
  title: 'One captured trial',
  description:
    'One captured Harbor trial, by capture key, trial id, trial name or a unique prefix of the key (trials lists them): rewards and their ' +
    'source, outcome, the exception with the end of its traceback, agent, model, tokens and cost, phase timings, warnings, the launcher\'s ' +
    'context, files by role and status with the first entries of the ledger, trajectories, and the rollout span id (span_tree shows the transcript).',
  input: z.strictObject({ run: runArg(), capture: textArg('Capture key, trial id, trial name, or a unique prefix of the capture key') }),
  output: z.object({
    run: z.string(),
    trial: TrialItemSchema,
    agent: z.string().nullable(),
    agent_version: z.string().nullable(),
    model: z.string().nullable(),
    model_provider: z.string().nullable(),
    reward_source: z.string().nullable(),
    tokens: z.object({ input: JsonNumberSchema.nullable(), cached: JsonNumberSchema.nullable(), output: JsonNumberSchema.nullable(), cost_usd: JsonNumberSchema.nullable() }).nullable(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
    timings: z.record(z.string(), JsonNumberSchema.nullable()).describe('Seconds per phase (environment_setup, agent_setup, agent_execution, verifier, …)'),
    traceback: z.string().nullable().describe('The last lines of the exception\'s traceback (or exception.txt)'),
    warnings: z.array(z.string()),
    context: z.record(z.string(), z.string()),
    source: z.object({ trial_dir: z.string(), host: z.string(), staged_at: z.string().nullable(), captured_at: z.string() }),
    files_by_role: JsonValueSchema.describe('Ledger entries per role and status'),
    files: z.array(z.object({ path: z.string(), role: z.string(), status: z.string(), size: z.number().nullable(), reason: z.string().nullable() })).describe('The first ledger entries'),
    files_total: z.number().int(),
    trajectory_warnings: z.array(z.string()),
    clipped: z.boolean(),
  }),
  run(args, ctx) {
    const { reader, path } = openRun(ctx, args.run);
    const t = reader.trial(args.capture);
    const item = trialItem(t);
    const tr = t.trial;
    const ex = tr.exception ?? (tr.step_results ?? []).find((o) => o.exception !== null)?.exception ?? null;
    const traceLines = (ex?.traceback || ex?.text || '').trimEnd().split(/\r?\n/).filter((l, i, all) => l !== '' || i < all.length - 1);
    const tjWarnings = t.trajectories.flatMap((j) => j.warnings.map((w) => `${j.path}: ${w}`));
    const build = (level: number) => {
      const d = DETAIL[level];
      const trace = traceLines.length ? traceLines.slice(-d.traceback).map((l) => cutText(l, d.text)).join('\n') : null;
      const files = t.ledger.entries.slice(0, d.entries).map((e) => ({ path: cutText(e.path, d.text), role: e.role, status: e.status, size: e.size, reason: e.reason === null ? null : cutText(e.reason, d.text) }));
      const warnings = tr.warnings.slice(0, d.warnings).map((w) => cutText(w, d.text));
      const trajectoryWarnings = tjWarnings.slice(0, d.warnings).map((w) => cutText(w, d.text));
      const clipped =
        (trace !== null && traceLines.length > d.traceback) || files.length < t.ledger.total || warnings.length < tr.warnings.length || trajectoryWarnings.length < tjWarnings.length;
      const timings = Object.fromEntries(Object.entries(tr.timings).map(([k, p]) => [k, jsonNumberOrNull(p.seconds)]));
      const structured = {
        run: path,
        trial: item,
        agent: tr.agent,
        agent_version: tr.agent_version,
        model: tr.model,
        model_provider: tr.model_provider,
        reward_source: tr.reward_source,
        tokens: tr.tokens === null ? null : { input: jsonNumberOrNull(tr.tokens.input), cached: jsonNumberOrNull(tr.tokens.cached), output: jsonNumberOrNull(tr.tokens.output), cost_usd: jsonNumberOrNull(tr.tokens.cost_usd) },
        started_at: tr.started_at,
        finished_at: tr.finished_at,
        timings,
        traceback: trace,
        warnings,
        context: Object.fromEntries(Object.entries(t.source.context).map(([k, v]) => [k, cutText(String(v), d.text)])),
        source: { trial_dir: t.source.trial_dir, host: t.source.host, staged_at: t.source.staged_at, captured_at: t.captured_at },
        files_by_role: clipJson(t.ledger.by_role ?? {}, { text: d.text, items: 50, keys: 50, depth: 4 }),
        files,
        files_total: t.ledger.total,
        trajectory_warnings: trajectoryWarnings,
        clipped,
      };
      const text = [
        line(`${path}: trial ${t.capture_key}`),
        trialItemText(item),
        line(`agent ${tr.agent ?? '—'}${tr.agent_version ? ` ${tr.agent_version}` : ''}, model ${tr.model ?? '—'}${tr.model_provider ? ` (${tr.model_provider})` : ''}${tr.reward_source ? `; rewards from ${tr.reward_source}` : ''}`),
        ...(tr.tokens ? [`tokens in ${num(tr.tokens.input)}, cached ${num(tr.tokens.cached)}, out ${num(tr.tokens.output)}, cost $${num(tr.tokens.cost_usd)}`] : []),
        ...(tr.started_at ? [line(`time ${tr.started_at} → ${tr.finished_at ?? 'unfinished'}; ${Object.entries(timings).map(([k, s]) => `${k} ${num(s)} s`).join(', ')}`)] : []),
        ...(Object.keys(structured.context).length ? [line(`context ${Object.entries(structured.context).map(([k, v]) => `${k}=${v}`).join(' ')}`)] : []),
        line(`source ${t.source.trial_dir} on ${t.source.host}; captured ${t.captured_at}`),
        ...warnings.map((w) => line(`warning: ${w}`)),
        ...trajectoryWarnings.map((w) => line(`trajectory warning: ${w}`)),
        ...(trace ? [`exception (last ${Math.min(traceLines.length, d.traceback)} of ${traceLines.length} lines):`, ...block(trace).split('\n').map((l) => `  ${l}`)] : []),
        `files (${t.ledger.total} entries):`,
        ...files.map((f) => line(`  ${f.status.padEnd(9)} ${f.role.padEnd(15)} ${String(f.size ?? '').padStart(9)}  ${f.path}${f.reason ? `  — ${f.reason}` : ''}`)),
        ...(files.length < t.ledger.total ? [`  … ${t.ledger.total - files.length} more entries not listed here`] : []),
      ].join('\n');
      return { text, structured };
    };
    const fit = largestFitting(DETAIL.length - 1, ctx.budget, build);
    if (fit === null) throw new ToolError(`trial ${t.capture_key} does not fit the byte budget of ${ctx.budget} bytes even cut down (raise --max-bytes)`);
    return fit.answer;
  },
});
