/**
 * Which step columns the report charts together. A chart holds metrics read side by side
 * (reward with its extremes, lengths with truncation); a second axis carries the series on
 * another scale (fractions next to token counts, the learning rate next to grad norms). A
 * spread (`reward_std`) is a band mean ± spread on its mean's axis: on an axis of its own a
 * flat 0.2 would sit at the reward's 0.5 and read as a reward.
 */
import { EXTRA_PREFIX, REWARD_COMPONENT_PREFIX } from '../schema/step-record.js';

/** What grouping needs of a run's step columns (a RunView has it; so do streamed reads). */
export interface ChartColumns {
  columns(): string[];
  seriesNames(): string[];
  componentNames(): string[];
  has(name: string): boolean;
  presentCount(name: string): number;
}

export interface ChartSeriesSpec {
  column: string;
  label: string;
  /** 0: the left axis, 1: the right one. */
  axis: 0 | 1;
}

/** A band `mean ± spread` around the chart's series `of`. */
export interface BandSpec {
  /** Index of the mean in the chart's series. */
  of: number;
  /** The spread's column (`reward_std`). */
  column: string;
  label: string;
}

export interface ChartSpec {
  id: string;
  title: string;
  /** Axis labels: left, and right when a series uses it. */
  axes: [string, string | null];
  series: ChartSeriesSpec[];
  bands: BandSpec[];
}

type Known = {
  id: string;
  title: string;
  axes: [string, string | null];
  series: Array<[column: string, axis: 0 | 1]>;
  /** Spreads drawn as a band around a mean of `series`. */
  spreads?: Array<[spread: string, mean: string]>;
};

/** The format's step fields in charts, in the order a person reads a run. */
const KNOWN: Known[] = [
  { id: 'reward', title: 'Reward', axes: ['reward', null], series: [['reward_mean', 0], ['reward_min', 0], ['reward_max', 0]], spreads: [['reward_std', 'reward_mean']] },
  { id: 'kl', title: 'KL to the reference', axes: ['kl_mean', 'kl_max'], series: [['kl_mean', 0], ['kl_max', 1]] },
  { id: 'entropy', title: 'Entropy and log-prob', axes: ['entropy', 'logprob'], series: [['entropy_mean', 0], ['logprob_mean', 1]] },
  { id: 'advantages', title: 'Advantages', axes: ['advantage', 'zero fraction'], series: [['adv_mean', 0], ['adv_zero_frac', 1]], spreads: [['adv_std', 'adv_mean']] },
  { id: 'groups', title: 'GRPO groups', axes: ['reward std in group', 'zero-variance fraction'], series: [['group_reward_std_mean', 0], ['zero_variance_group_frac', 1]] },
  { id: 'clipping', title: 'Clipping and ratio', axes: ['ratio', 'fraction'], series: [['ratio_mean', 0], ['ratio_p95', 0], ['clip_fraction', 1]] },
  { id: 'value', title: 'Value head', axes: ['value loss', 'fraction'], series: [['value_loss', 0], ['value_explained_variance', 1], ['value_clip_fraction', 1]] },
  {
    id: 'lengths',
    title: 'Lengths and truncation',
    axes: ['tokens', 'fraction'],
    series: [
      ['completion_len_mean', 0], ['completion_len_p95', 0], ['completion_len_max', 0],
      ['max_len_hit_frac', 1], ['truncation_rate', 1], ['eos_rate', 1], ['repetition_rate', 1],
    ],
  },
  { id: 'loss', title: 'Loss', axes: ['loss', null], series: [['loss', 0]] },
  { id: 'gradients', title: 'Grad norm and learning rate', axes: ['grad norm', 'lr'], series: [['grad_norm', 0], ['grad_norm_post_clip', 0], ['lr', 1]] },
  { id: 'update', title: 'Weight update ratio', axes: ['‖Δw‖ / ‖w‖', null], series: [['weight_update_ratio', 0]] },
  { id: 'non-finite', title: 'NaN and Inf counts', axes: ['count', null], series: [['nan_count', 0], ['inf_count', 0]] },
  { id: 'throughput', title: 'Throughput', axes: ['seconds', null], series: [['step_time_s', 0], ['generation_time_s', 0], ['optimization_time_s', 0]] },
];

/** Columns that are bookkeeping, not metrics. */
const NOT_CHARTED = new Set(['step', 'timestamp', 'rank']);

/** Components per chart: beyond that the lines cannot be told apart. */
const COMPONENTS_PER_CHART = 8;

/**
 * The charts for `view`: every known group with at least one logged value, the reward
 * components (several charts when there are many), then one chart per extra metric and per
 * column this build does not know (each on its own scale; `x_std` is a band on the chart of
 * `x_mean` or `x` when that is logged too). List columns are not charted.
 */
export function chartGroups(view: ChartColumns): ChartSpec[] {
  const logged = (c: string) => view.has(c) && view.presentCount(c) > 0;
  const scalar = new Set(view.seriesNames());
  const listCols = new Set(view.columns().filter((c) => !scalar.has(c)));
  const charts: ChartSpec[] = [];
  const claimed = new Set<string>();
  for (const k of KNOWN) {
    const series = k.series.filter(([c]) => logged(c)).map(([column, axis]) => ({ column, label: column, axis }));
    for (const [c] of [...k.series, ...(k.spreads ?? [])]) claimed.add(c);
    const bands: BandSpec[] = [];
    const lone: ChartSeriesSpec[] = [];
    for (const [spread, mean] of k.spreads ?? []) {
      if (!logged(spread)) continue;
      const of = series.findIndex((s) => s.column === mean);
      if (of >= 0) bands.push({ of, column: spread, label: `${mean} ± ${spread}` });
      else lone.push({ column: spread, label: spread, axis: 0 });
    }
    if (series.length > 0) {
      const usesRight = series.some((s) => s.axis === 1);
      // a right axis alone reads better on the left
      const onlyRight = series.every((s) => s.axis === 1);
      charts.push({
        id: k.id,
        title: k.title,
        axes: onlyRight ? [k.axes[1] ?? '', null] : [k.axes[0], usesRight ? k.axes[1] : null],
        series: onlyRight ? series.map((s) => ({ ...s, axis: 0 as const })) : series,
        bands,
      });
    }
    // a spread whose mean was not logged: its own chart, never a second axis
    if (lone.length) charts.push({ id: `${k.id}-spread`, title: `${k.title}: spread`, axes: [lone[0].column, null], series: lone, bands: [] });
    if (k.id === 'reward') charts.push(...componentCharts(view, logged));
  }
  if (!charts.some((c) => c.id.startsWith('reward-components'))) charts.unshift(...componentCharts(view, logged));
  const others = view.columns().filter((c) => !NOT_CHARTED.has(c) && !claimed.has(c) && !listCols.has(c) && !c.startsWith(REWARD_COMPONENT_PREFIX) && logged(c));
  const meanOf = spreadMeans(others);
  const own = new Map<string, ChartSpec>();
  for (const c of others) {
    if (meanOf.has(c)) continue;
    const extra = c.startsWith(EXTRA_PREFIX);
    const label = labelOf(c);
    const chart: ChartSpec = { id: `${extra ? 'extra' : 'other'}-${slug(label)}`, title: extra ? `extra: ${label}` : label, axes: [label, null], series: [{ column: c, label, axis: 0 }], bands: [] };
    own.set(c, chart);
    charts.push(chart);
  }
  for (const [spread, mean] of meanOf) own.get(mean)!.bands.push({ of: 0, column: spread, label: `${labelOf(mean)} ± ${labelOf(spread)}` });
  return dedupeIds(charts);
}

function labelOf(column: string): string {
  return column.startsWith(EXTRA_PREFIX) ? column.slice(EXTRA_PREFIX.length) : column;
}

/** Which of `columns` are spreads of another: `x_std` of `x_mean`, else of `x` (never of a spread). */
function spreadMeans(columns: string[]): Map<string, string> {
  const present = new Set(columns);
  const out = new Map<string, string>();
  for (const c of columns) {
    if (!c.endsWith('_std')) continue;
    const base = c.slice(0, -'_std'.length);
    const mean = [`${base}_mean`, base].find((m) => present.has(m) && !m.endsWith('_std'));
    if (mean !== undefined) out.set(c, mean);
  }
  return out;
}

function componentCharts(view: ChartColumns, logged: (c: string) => boolean): ChartSpec[] {
  const names = view.componentNames().filter((n) => logged(`${REWARD_COMPONENT_PREFIX}${n}`));
  const out: ChartSpec[] = [];
  for (let i = 0; i < names.length; i += COMPONENTS_PER_CHART) {
    const part = names.slice(i, i + COMPONENTS_PER_CHART);
    const suffix = names.length > COMPONENTS_PER_CHART ? ` (${i / COMPONENTS_PER_CHART + 1})` : '';
    out.push({
      id: `reward-components${suffix ? `-${i / COMPONENTS_PER_CHART + 1}` : ''}`,
      title: `Reward components${suffix}`,
      axes: ['reward', null],
      series: part.map((n) => ({ column: `${REWARD_COMPONENT_PREFIX}${n}`, label: n, axis: 0 as const })),
      bands: [],
    });
  }
  return out;
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'metric';
}

/** Two metrics can slug alike (`a/b`, `a.b`): ids must stay unique in the page. */
function dedupeIds(charts: ChartSpec[]): ChartSpec[] {
  const seen = new Map<string, number>();
  return charts.map((c) => {
    const n = seen.get(c.id) ?? 0;
    seen.set(c.id, n + 1);
    return n === 0 ? c : { ...c, id: `${c.id}-${n + 1}` };
  });
}
