/**
 * One run in a few facts, as list_runs lists it and run_info opens with: identity, steps,
 * how it stands (live, closed, ended without a close) and the doctor's finding counts. A
 * part that cannot be read is named in `damaged` and the rest still given.
 */
import { z } from 'zod';

import { diagnose } from '../doctor/diagnose.js';
import type { Diagnosis } from '../doctor/diagnose.js';
import type { RunReader } from '../reader/run-reader.js';
import { runStatus, settleRunStatus } from '../reader/run-status.js';
import { writerLock } from '../reader/writer-lock.js';
import { SurfaceReads } from '../reader/surface-reads.js';
import type { RunEvent } from '../schema/event.js';
import { runState } from '../reader/run-state.js';
import { FindingCountsSchema, RunStatusSchema } from './schemas.js';
import { line, num } from './text.js';

export const RunSummarySchema = z.object({
  id: z.string(),
  path: z.string().describe('Pass this as `run` to the other tools'),
  algorithm: z.string(),
  model: z.string().nullable(),
  steps: z.number().int().nullable().describe('Step rows logged (null: the steps are damaged)'),
  first_step: z.number().nullable(),
  last_step: z.number().nullable(),
  status: RunStatusSchema,
  last_write: z.string().nullable().describe('ISO time of the last write to the steps or events'),
  findings: FindingCountsSchema.nullable().describe('The doctor\'s findings by severity (null: not diagnosed, see damaged)'),
  damaged: z.array(z.object({ surface: z.string(), error: z.string() })).describe('Parts of the run that could not be read, naming the file'),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

export interface SummaryReads {
  reads: SurfaceReads;
  events: RunEvent[];
  diagnosis: Diagnosis | null;
  summary: RunSummary;
}

function countFindings(d: Diagnosis): z.infer<typeof FindingCountsSchema> {
  const counts = { critical: 0, warn: 0, info: 0 };
  for (const f of d.findings) counts[f.severity]++;
  return counts;
}

/** The summary of `reader`, shown as `shownPath`; the reads are kept for run_info. */
export function summarizeRun(reader: RunReader, shownPath: string): SummaryReads {
  const reads = new SurfaceReads();
  for (const d of reader.damagedFiles()) reads.mark(d.surface, d.reason);
  const steps = reads.attempt('steps', null, () => reader.view(['step']).steps);
  let first = Infinity;
  let last = -Infinity;
  for (const s of steps ?? []) {
    if (s < first) first = s;
    if (s > last) last = s;
  }
  const events = reads.attempt('events', [] as RunEvent[], () => reader.events());
  const storage = reads.attempt('steps', null, () => reader.storage());
  const state = runState(storage ? settleRunStatus(runStatus(events), { layout: storage.layout, lock: writerLock(reader.runDir) }) : runStatus(events));
  const lastWrite = reads.attempt('steps', null, () => reader.lastWriteMs());
  const diagnosis = reads.attempt('doctor', null, () => diagnose(reader));
  const m = reader.manifest;
  return {
    reads,
    events,
    diagnosis,
    summary: {
      id: m.run_id,
      path: shownPath,
      algorithm: m.algorithm,
      model: m.model_name ?? null,
      steps: steps ? steps.length : null,
      first_step: steps?.length ? first : null,
      last_step: steps?.length ? last : null,
      status: state,
      last_write: lastWrite === null ? null : new Date(lastWrite).toISOString(),
      findings: diagnosis ? countFindings(diagnosis) : null,
      damaged: reads.damaged,
    },
  };
}

/** The summary in one or two lines of text. */
export function summaryText(s: RunSummary): string {
  const steps = s.steps === null ? 'steps damaged' : s.steps === 0 ? 'no steps yet' : `${s.steps} steps (${num(s.first_step)}…${num(s.last_step)})`;
  const f = s.findings;
  const findings = f === null ? 'not diagnosed' : f.critical + f.warn + f.info === 0 ? 'no findings' : `findings: ${f.critical} critical, ${f.warn} warn, ${f.info} info`;
  const head = line(`${s.path}  run ${s.id}  ${s.algorithm}${s.model ? `, ${s.model}` : ''}  ${steps}  ${s.status.status}  ${findings}`);
  const damaged = s.damaged.map((d) => `\n    damaged ${line(d.surface)}: ${line(d.error)}`).join('');
  // the detail says more than the status only when the run did not simply close
  const detail = s.status.detail === s.status.status ? '' : `\n    ${line(s.status.detail)}`;
  return `${head}${detail}${damaged}`;
}
