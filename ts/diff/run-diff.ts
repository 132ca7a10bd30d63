import { diagnoseAsync } from '../doctor/diagnose.js';
import { RlprobeError } from '../errors.js';
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
  /** Run B's, likewise (the dashboard has both runs' diagnoses, or queues them). */
  findingsB?: Finding[] | Promise<Finding[]>;
  /** Whether A's findings read samples: B is diagnosed the same way, or a sample-based sign
   *  would read as "only in A" (false). */
  samples?: boolean;
  viewA?: RunView;
  viewB?: RunView;
}

const BOOKKEEPING = new Set(['step', 'timestamp', 'rank']);

/**
 * Metrics read per pass: two runs of 1,000,000 steps × 47 columns would be 750 MB held
 * whole; a pass of 4 columns of each is 80 MB. Each read costs a fixed ~80 ms (files
 * opened, footers read), so single columns would be slow.
 */
const METRICS_PER_PASS = 4;

/**
 * Between passes, back to the event loop: the columns are native memory V8 is told of, and
 * it frees them in collection tasks that a loop of native reads never lets run (measured
 * at 1,000,000 steps: 990 MB peak without this, 310 MB with it, at the same speed).
 */
const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

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
 * have on the steps both logged, and the doctor's findings of each. Memory is bounded by
 * design: the metrics are read a few columns at a time, and the two diagnoses run one
 * after the other on the libuv pool (each holds a run's whole step table) while the
 * metrics are compared here.
 */
export async function diffRuns(a: RunReader, b: RunReader, reuse: DiffReuse = {}): Promise<RunDiff> {
  // the doctor without samples: findings, not their evidence, are what is compared
  const samples = reuse.findingsA !== undefined && reuse.samples === true;
  const findingsOf = async (r: RunReader, known?: Finding[] | Promise<Finding[]>) => (known ? await known : (await diagnoseAsync(r, { samples })).findings);
  // B's known findings may fail before A's are awaited: that is not an unhandled rejection
  if (reuse.findingsB instanceof Promise) reuse.findingsB.catch(() => {});
  const findingsA = findingsOf(a, reuse.findingsA);
  // B's diagnosis waits for A's (a failure of A's still ends the chain through Promise.all)
  const findingsB = findingsA.then(
    () => findingsOf(b, reuse.findingsB),
    () => [] as Finding[],
  );
  const findings = Promise.all([findingsA, findingsB]);
  // a rejection is awaited below; until then it must not count as unhandled
  findings.catch(() => {});
  const pick = (r: RunReader) => ({
    algorithm: r.manifest.algorithm,
    model_name: r.manifest.model_name ?? null,
    world_size: r.manifest.world_size,
    schema_version: r.manifest.schema_version,
  });
  const stepsA = (reuse.viewA ?? a.view(['step'])).steps;
  const stepsB = (reuse.viewB ?? b.view(['step'])).steps;
  const common = align(stepsA, stepsB);
  const warnings: string[] = [];
  if (common.steps.length !== stepsA.length || common.steps.length !== stepsB.length) {
    warnings.push(
      `the step axes differ (${stepsA.length} steps in A, ${stepsB.length} in B, ${common.steps.length} in common): metrics are compared on the common steps only`,
    );
  }
  const na = metricNames(a, reuse.viewA);
  const nb = metricNames(b, reuse.viewB);
  const shared = [...na].filter((n) => nb.has(n)).sort();
  const metrics: MetricComparison[] = [];
  for (let i = 0; i < shared.length; i += METRICS_PER_PASS) {
    const pass = shared.slice(i, i + METRICS_PER_PASS);
    const va = reuse.viewA ?? prefixView(a, pass, stepsA, 'A');
    const vb = reuse.viewB ?? prefixView(b, pass, stepsB, 'B');
    for (const m of pass) metrics.push(compareMetric(m, common.steps, gather(va.series(m), common.ia), gather(vb.series(m), common.ib)));
    if (!reuse.viewA || !reuse.viewB) await nextTick();
  }
  metrics.sort((x, y) => (x.divergence?.step ?? Infinity) - (y.divergence?.step ?? Infinity) || (x.metric < y.metric ? -1 : 1));
  const lead = metrics[0]?.divergence ? { metric: metrics[0].metric, step: metrics[0].divergence.step } : null;
  const [fa, fb] = await findings;
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
      a: stepsA.length,
      b: stepsB.length,
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

/** A run's metric names: scalar step columns but the bookkeeping ones (from the footers alone). */
function metricNames(r: RunReader, view?: RunView): Set<string> {
  const names = view ? view.seriesNames() : r.stepColumns().filter((c) => c.kind !== 'list_f64').map((c) => c.name);
  return new Set(names.filter((n) => !BOOKKEEPING.has(n)));
}

/**
 * The columns `names` of `r`, row for row with `steps` (read first). A live run may have
 * gained rows since: they come after (parts are appended, and a compaction keeps the
 * order), so the first `steps.length` rows are the same rows; anything else means the run
 * was rewritten under the diff, which is said rather than compared wrong.
 */
function prefixView(r: RunReader, names: string[], steps: Float64Array, which: 'A' | 'B'): { series(name: string): Float64Array } {
  const view = r.view(names);
  const now = view.steps;
  let same = now.length >= steps.length;
  for (let i = 0; same && i < steps.length; i++) same = Object.is(now[i], steps[i]);
  if (!same) {
    throw new RlprobeError('RLPROBE_IO', `run ${which} (${r.runDir}) changed while it was compared (its first ${steps.length} rows are no longer the ones read first): diff it again`);
  }
  return { series: (name) => view.series(name).subarray(0, steps.length) };
}
