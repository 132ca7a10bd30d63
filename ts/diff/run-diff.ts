import { diagnoseAsync } from '../doctor/diagnose.js';
import type { Finding } from '../doctor/finding.js';
import type { RunReader } from '../reader/run-reader.js';
import type { RunView } from '../reader/run-view.js';
import { compareMetric } from './metric-diff.js';
import type { MetricComparison } from './metric-diff.js';
import { diffObjects } from './object-diff.js';
import type { ObjectChange } from './object-diff.js';

export interface RunDiff {
  a: string;
  b: string;
  /** algorithm, model_name, world_size, schema_version differences. */
  run: ObjectChange[];
  trainer_config: ObjectChange[];
  environment: ObjectChange[];
  steps: { a: number; b: number; common: number; first_common: number | null; last_common: number | null };
  /** Said when the step axes differ (compared on the common steps only). */
  warnings: string[];
  /** Metrics present in both, earliest divergence first, then by name. */
  metrics: MetricComparison[];
  only_in_a: string[];
  only_in_b: string[];
  /** The metric that diverged first (the lead indicator), if any. */
  lead: { metric: string; step: number } | null;
  findings: { only_in_a: Finding[]; only_in_b: Finding[] };
}

/** What a caller (the report) already has of the runs, so they are not read twice. */
export interface DiffReuse {
  /** Run A's findings, or their promise, from a diagnosis with `samples` as below. */
  findingsA?: Finding[] | Promise<Finding[]>;
  /** Whether A's findings read samples: B is diagnosed the same way, or a sample-based sign
   *  would read as "only in A" (false). */
  samples?: boolean;
  viewA?: RunView;
  viewB?: RunView;
}

const BOOKKEEPING = new Set(['step', 'timestamp', 'rank']);

export interface Alignment {
  steps: Float64Array;
  /** Positions in A and B of each common step; null when a run's steps are the common ones, in order. */
  ia: Int32Array | null;
  ib: Int32Array | null;
}

/** The steps both runs have, ascending, and where each sits in A and B. */
export function align(a: Float64Array, b: Float64Array): Alignment {
  const ascending = (s: Float64Array) => s.every((x, i) => i === 0 || x > s[i - 1]);
  if (a.length === b.length && ascending(a) && a.every((x, i) => x === b[i])) return { steps: a, ia: null, ib: null };
  const posB = new Map<number, number>();
  b.forEach((s, i) => posB.set(s, i));
  const order = Array.from(a.keys()).sort((x, y) => a[x] - a[y]);
  const steps: number[] = [];
  const ia: number[] = [];
  const ib: number[] = [];
  for (const i of order) {
    const j = posB.get(a[i]);
    if (j === undefined) continue;
    steps.push(a[i]);
    ia.push(i);
    ib.push(j);
  }
  return { steps: Float64Array.from(steps), ia: Int32Array.from(ia), ib: Int32Array.from(ib) };
}

/** `xs` at positions `at` (xs itself when at is null). */
export function gather(xs: Float64Array, at: Int32Array | null): Float64Array {
  if (at === null) return xs;
  const out = new Float64Array(at.length);
  for (let k = 0; k < at.length; k++) out[k] = xs[at[k]];
  return out;
}

/**
 * Compares two runs: manifests (run facts, trainer config, environment), every metric both
 * have on the steps both logged, and the doctor's findings of each (both diagnosed on the
 * libuv pool while the steps are compared here).
 */
export async function diffRuns(a: RunReader, b: RunReader, reuse: DiffReuse = {}): Promise<RunDiff> {
  // the doctor without samples: findings, not their evidence, are what is compared
  const samples = reuse.findingsA !== undefined && reuse.samples === true;
  const findingsOf = async (r: RunReader, known?: Finding[] | Promise<Finding[]>) => (known ? { findings: await known } : diagnoseAsync(r, { samples }));
  const findings = Promise.all([findingsOf(a, reuse.findingsA), findingsOf(b)]);
  const pick = (r: RunReader) => ({
    algorithm: r.manifest.algorithm,
    model_name: r.manifest.model_name ?? null,
    world_size: r.manifest.world_size,
    schema_version: r.manifest.schema_version,
  });
  const va = reuse.viewA ?? a.view();
  const vb = reuse.viewB ?? b.view();
  const common = align(va.steps, vb.steps);
  const warnings: string[] = [];
  if (common.steps.length !== va.length || common.steps.length !== vb.length) {
    warnings.push(
      `the step axes differ (${va.length} steps in A, ${vb.length} in B, ${common.steps.length} in common): metrics are compared on the common steps only`,
    );
  }
  const names = (v: typeof va) => new Set(v.seriesNames().filter((n) => !BOOKKEEPING.has(n)));
  const na = names(va);
  const nb = names(vb);
  const metrics: MetricComparison[] = [];
  for (const m of [...na].filter((n) => nb.has(n)).sort()) {
    const sa = va.series(m);
    const sb = vb.series(m);
    metrics.push(compareMetric(m, common.steps, gather(sa, common.ia), gather(sb, common.ib)));
  }
  metrics.sort((x, y) => (x.divergence?.step ?? Infinity) - (y.divergence?.step ?? Infinity) || (x.metric < y.metric ? -1 : 1));
  const lead = metrics[0]?.divergence ? { metric: metrics[0].metric, step: metrics[0].divergence.step } : null;
  const [{ findings: fa }, { findings: fb }] = await findings;
  const codes = (fs: Finding[]) => new Set(fs.map((f) => f.code));
  const ca = codes(fa);
  const cb = codes(fb);
  return {
    a: a.runDir,
    b: b.runDir,
    run: diffObjects(pick(a), pick(b)),
    trainer_config: diffObjects(a.manifest.trainer_config, b.manifest.trainer_config),
    environment: diffObjects(a.manifest.environment, b.manifest.environment),
    steps: {
      a: va.length,
      b: vb.length,
      common: common.steps.length,
      first_common: common.steps.length ? common.steps[0] : null,
      last_common: common.steps.length ? common.steps[common.steps.length - 1] : null,
    },
    warnings,
    metrics,
    only_in_a: [...na].filter((n) => !nb.has(n)).sort(),
    only_in_b: [...nb].filter((n) => !na.has(n)).sort(),
    lead,
    findings: { only_in_a: fa.filter((f) => !cb.has(f.code)), only_in_b: fb.filter((f) => !ca.has(f.code)) },
  };
}
