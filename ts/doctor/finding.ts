import type { NativeFinding } from '../native.js';

export type Severity = 'info' | 'warn' | 'critical';

export const SEVERITY_RANK: Record<Severity, number> = { info: 0, warn: 1, critical: 2 };

/** A per-sample record that shows the problem. */
export interface EvidenceSample {
  step: number;
  sample_id: string;
  why: string;
}

/**
 * The levels a finding states, each the median of the column's present raw values over
 * the steps given (inclusive): re-derive them with `probe samples`/RunView.
 */
export interface FindingLevels {
  column: string;
  start: number;
  start_steps: [number, number];
  end: number;
  end_steps: [number, number];
  /** end / start */
  ratio: number;
}

/**
 * What the doctor reports (also the `data` of a `finding` event and each line of
 * `probe doctor --json`). Steps are step numbers, not logged-point indices.
 */
export interface Finding {
  /** Stable signature code, e.g. ENTROPY_COLLAPSE. */
  code: string;
  severity: Severity;
  onset_step: number;
  last_step: number;
  /** 0..1 */
  confidence: number;
  message: string;
  remedy: string;
  /** Evidence numbers, in reading order. */
  evidence: Record<string, number>;
  columns: string[];
  /** The finding this one is a consequence of (same physics, named once). */
  root_cause: string | null;
  samples: EvidenceSample[];
  /** Start and end level of the column the finding is about, where it states them. */
  levels: FindingLevels | null;
}

export function findingOf(n: NativeFinding): Finding {
  const evidence: Record<string, number> = {};
  for (const e of n.evidence) evidence[e.name] = e.value;
  return {
    code: n.code,
    severity: n.severity as Severity,
    onset_step: n.onsetStep,
    last_step: n.lastStep,
    confidence: n.confidence,
    message: n.message,
    remedy: n.remedy,
    evidence,
    columns: n.columns,
    root_cause: n.rootCause ?? null,
    samples: n.samples.map((s) => ({ step: s.step, sample_id: s.sampleId, why: s.why })),
    levels: n.levels
      ? {
          column: n.levels.column,
          start: n.levels.start,
          start_steps: [n.levels.startFromStep, n.levels.startToStep],
          end: n.levels.end,
          end_steps: [n.levels.endFromStep, n.levels.endToStep],
          ratio: n.levels.ratio,
        }
      : null,
  };
}

/** Whether `f` is at least as severe as `level`. */
export function atLeast(f: Finding, level: Severity): boolean {
  return SEVERITY_RANK[f.severity] >= SEVERITY_RANK[level];
}
