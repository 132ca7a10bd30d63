/**
 * Comparing one metric across two runs aligned on their common steps: final, best, area
 * under the curve, and where the two first diverge.
 */

/**
 * Whether higher values of a metric are better, from its name (null: no better direction,
 * e.g. entropy, grad norm, clip fraction or a reward's spread).
 */
export function direction(name: string): 'higher' | 'lower' | null {
  const n = name.toLowerCase();
  if (/loss|kl|nan_count|inf_count|truncation|max_len_hit|repetition|_time_s|zero_frac|zero_variance|mismatch|probs_diff/.test(n)) return 'lower';
  if (/std|var$|variance_/.test(n) && !/explained_variance/.test(n)) return null;
  if (/reward|acc|score|explained_variance|eos_rate|pass|success|tokens_per_s/.test(n)) return 'higher';
  return null;
}

export interface MetricComparison {
  metric: string;
  final: { a: number | null; b: number | null };
  /** Max or min by the metric's direction (null when it has none). */
  best: { a: number | null; b: number | null } | null;
  /** Trapezoidal area over the common steps both runs have a value at. */
  auc: { a: number | null; b: number | null };
  /** The first step where |b − a| stays past 3 σ for 3 points in a row. */
  divergence: { step: number; difference: number; sigma: number } | null;
}

/** Points of the difference's history σ needs before it is judged. */
const MIN_HISTORY = 10;
/** Trailing points σ is estimated over. */
const SIGMA_WINDOW = 100;
/** σ multiple and run length of a divergence. */
const SIGMAS = 3;
const IN_A_ROW = 3;

function last(xs: ArrayLike<number>): number | null {
  for (let i = xs.length - 1; i >= 0; i--) if (!Number.isNaN(xs[i])) return xs[i];
  return null;
}

function extreme(xs: ArrayLike<number>, dir: 'higher' | 'lower'): number | null {
  let best: number | null = null;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i];
    if (Number.isNaN(x)) continue;
    if (best === null || (dir === 'higher' ? x > best : x < best)) best = x;
  }
  return best;
}

function auc(steps: ArrayLike<number>, xs: ArrayLike<number>, other: ArrayLike<number>): number | null {
  let area = 0;
  let prev = -1;
  for (let i = 0; i < xs.length; i++) {
    // only where both runs have a value: the two areas cover the same steps
    if (Number.isNaN(xs[i]) || Number.isNaN(other[i])) continue;
    if (prev >= 0) area += ((xs[i] + xs[prev]) / 2) * (steps[i] - steps[prev]);
    prev = i;
  }
  return prev >= 0 ? area : null;
}

/**
 * The first divergence of `b − a`: σ is the noise of the difference, estimated from past
 * points only — the mean absolute change between consecutive points over the trailing
 * window (× √π/2, the σ of Gaussian noise) — never from a centred window, which would use
 * the future. O(n).
 */
export function firstDivergence(steps: ArrayLike<number>, a: ArrayLike<number>, b: ArrayLike<number>): MetricComparison['divergence'] {
  // typed arrays, sized once: at 1,000,000 steps × dozens of metrics, growing JS arrays
  // was most of `probe diff`'s time
  const d = new Float64Array(steps.length);
  const at = new Float64Array(steps.length);
  let len = 0;
  for (let i = 0; i < steps.length; i++) {
    if (!Number.isNaN(a[i]) && !Number.isNaN(b[i])) {
      d[len] = b[i] - a[i];
      at[len] = steps[i];
      len++;
    }
  }
  // changes[k] = |d[k] − d[k−1]| (changes[0] = 0), computed where the window needs it
  const change = (k: number) => (k === 0 ? 0 : Math.abs(d[k] - d[k - 1]));
  let sum = 0;
  let run = 0;
  for (let i = 1; i < len; i++) {
    // the trailing window holds changes[i - SIGMA_WINDOW .. i - 1]: the point judged is not in it
    if (i >= 2) sum += change(i - 1);
    if (i - 1 - SIGMA_WINDOW >= 1) sum -= change(i - 1 - SIGMA_WINDOW);
    const n = Math.min(i - 1, SIGMA_WINDOW);
    if (n < MIN_HISTORY) continue;
    const sigma = ((sum / n) * Math.sqrt(Math.PI)) / 2;
    const past = sigma > 0 ? Math.abs(d[i]) > SIGMAS * sigma : d[i] !== 0;
    run = past ? run + 1 : 0;
    if (run === IN_A_ROW) {
      const first = i - IN_A_ROW + 1;
      return { step: at[first], difference: d[first], sigma };
    }
  }
  return null;
}

/** Compares one metric of two runs aligned on the same steps. */
export function compareMetric(metric: string, steps: ArrayLike<number>, a: ArrayLike<number>, b: ArrayLike<number>): MetricComparison {
  const dir = direction(metric);
  return {
    metric,
    final: { a: last(a), b: last(b) },
    best: dir ? { a: extreme(a, dir), b: extreme(b, dir) } : null,
    auc: { a: auc(steps, a, b), b: auc(steps, b, a) },
    divergence: firstDivergence(steps, a, b),
  };
}
