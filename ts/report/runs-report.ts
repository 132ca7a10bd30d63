/**
 * `probe report A B C`: several runs in one report — their series overlaid on one step axis
 * (a line per run, in the run's colour) and each run's findings, samples and events under
 * its name, with the settings that differ between them. The runs are read one at a time,
 * each exactly as a one-run report reads it (its steps downsampled, then released), so a
 * report of N runs holds one run's columns at a time, never N.
 */
import type { RunManifest } from '../schema/manifest.js';
import type { RunReader } from '../reader/run-reader.js';
import { VERSION } from '../version.js';
import { buildReport } from './build-report.js';
import type { ReportChart, ReportOptions, RunFacts, RunReport } from './build-report.js';
import { seriesColour } from './colours.js';
import { DEFAULT_BUCKETS } from './downsample.js';
import { overlayCharts } from './overlay.js';

export type RunsReportOptions = Omit<ReportOptions, 'against'>;

export interface ReportedRun {
  /** Its name on the page: the run id (with its directory when two runs share one). */
  label: string;
  color: string;
  /** Prefix of its element ids on the page (`run2-`). */
  prefix: string;
  report: RunFacts;
}

/** A setting whose value differs between the runs; `undefined` where a run does not set it. */
export interface SettingDifference {
  key: string;
  values: unknown[];
}

export interface RunsReport {
  generated_at: string;
  rlprobe_version: string;
  runs: ReportedRun[];
  x: { run: number[] };
  /** One chart per metric any run logged, a line per run that logged it. */
  charts: ReportChart[];
  downsampling: { buckets: number; points: number; gridded: boolean };
  /** Manifest facts and trainer config keys that differ between the runs. */
  differences: SettingDifference[];
}

/** Names for the runs: their ids, made unique with their directories, then their positions. */
export function runLabels(runs: Array<{ id: string; dir: string }>): string[] {
  const count = (xs: string[]) => xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>());
  const ids = count(runs.map((r) => r.id));
  const first = runs.map((r) => (ids.get(r.id)! > 1 ? `${r.id} (${r.dir})` : r.id));
  const again = count(first);
  return first.map((l, k) => (again.get(l)! > 1 ? `${l} #${k + 1}` : l));
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}

/** `v` as dotted keys (objects recursed; arrays and values whole, as `probe diff` compares them). */
function flatten(v: unknown, key: string, out: Map<string, unknown>): void {
  if (isPlainObject(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v)) flatten(x, key ? `${key}.${k}` : k, out);
  } else out.set(key, v);
}

/** What a person compares runs by: the algorithm, model, world size, trainer config. */
function settings(m: RunManifest): Map<string, unknown> {
  const out = new Map<string, unknown>();
  flatten({ algorithm: m.algorithm, model_name: m.model_name, world_size: m.world_size }, '', out);
  flatten(m.trainer_config ?? {}, 'trainer_config', out);
  return out;
}

export function settingDifferences(manifests: RunManifest[]): SettingDifference[] {
  const each = manifests.map(settings);
  const keys = [...new Set(each.flatMap((m) => [...m.keys()]))].sort();
  const out: SettingDifference[] = [];
  for (const key of keys) {
    const values = each.map((m) => m.get(key));
    const texts = new Set(values.map((v) => (v === undefined ? '\u0000unset' : JSON.stringify(v))));
    if (texts.size > 1) out.push({ key, values });
  }
  return out;
}

/** Gathers the report of `readers` (at least one; one run at a time). */
export async function buildRunsReport(readers: RunReader[], options: RunsReportOptions = {}): Promise<RunsReport> {
  const labels = runLabels(readers.map((r) => ({ id: r.manifest.run_id, dir: r.runDir })));
  const buckets = options.buckets ?? DEFAULT_BUCKETS;
  let perRun = 0;
  const runs: Array<{ label: string; color: string; prefix: string; report: RunReport }> = [];
  for (const [k, reader] of readers.entries()) {
    const report = await buildReport(reader, {
      ...options,
      onProgress: (done, total, stage) => {
        perRun = total;
        options.onProgress?.(k * total + done, readers.length * total + 1, `${labels[k]}: ${stage}`);
      },
    });
    runs.push({ label: labels[k], color: seriesColour(k), prefix: `run${k + 1}-`, report });
  }
  options.onProgress?.(readers.length * perRun, readers.length * perRun + 1, 'overlaying the runs');
  const overlay = overlayCharts(runs, buckets);
  return {
    generated_at: new Date().toISOString(),
    rlprobe_version: VERSION,
    // each run's own charts are merged above: not kept twice
    runs: runs.map(({ report: { charts: _c, x: _x, diff: _d, ...facts }, ...run }) => ({ ...run, report: facts })),
    x: { run: overlay.x },
    charts: overlay.charts,
    downsampling: { buckets, points: overlay.x.length, gridded: overlay.gridded },
    differences: settingDifferences(readers.map((r) => r.manifest)),
  };
}
