import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError, native } from './errors.js';
import { compactSamples, compactSpans, compactSteps } from './native.js';
import { SCHEMA_VERSION } from './schema/manifest.js';

export interface CompactResult {
  /** Part files merged by this call. */
  partsMerged: number;
  /** Parts a previous, interrupted compaction had absorbed, deleted now. */
  leftoversRemoved: number;
  /** Rows in the compacted file(s): all of steps.parquet (spans.parquet); for samples, the new shards. */
  rows: number;
  bytes: number;
}

/** One unit of a run's compaction: the steps, the samples or the spans of one rank directory. */
export interface CompactUnit {
  dir: string;
  rank: number;
  what: 'steps' | 'samples' | 'spans';
}

export interface CompactProgress {
  done: number;
  total: number;
  unit: CompactUnit;
  result: CompactResult;
}

/** The run's compaction units: rank 0 then every `rank-NNN/`, steps then samples (then spans, where recorded). */
export function compactUnits(runDir: string): CompactUnit[] {
  const dir = path.resolve(runDir);
  if (!existsSync(path.join(dir, 'manifest.json'))) {
    throw new RlprobeError('RLPROBE_NOT_A_RUN', `not a run directory (no manifest.json): ${dir}`);
  }
  assertCompactable(dir);
  const ranks = readdirSync(dir)
    .filter((n) => /^rank-\d+$/.test(n) && existsSync(path.join(dir, n, 'manifest.json')))
    .map((n) => ({ rank: Number(n.slice(5)), dir: path.join(dir, n) }))
    .sort((a, b) => a.rank - b.rank);
  return [{ rank: 0, dir }, ...ranks].flatMap(({ rank, dir: d }) => [
    { dir: d, rank, what: 'steps' as const },
    { dir: d, rank, what: 'samples' as const },
    ...(existsSync(path.join(d, 'spans')) ? [{ dir: d, rank, what: 'spans' as const }] : []),
  ]);
}

/**
 * Compaction writes this version's layout, so it refuses a recording of another version
 * (a newer one it cannot read; an older one is migrated on read, never rewritten).
 */
function assertCompactable(dir: string): void {
  let version: unknown;
  try {
    version = (JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { schema_version?: unknown }).schema_version;
  } catch (error) {
    throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${path.join(dir, 'manifest.json')} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof version === 'number' && version > SCHEMA_VERSION) {
    throw new RlprobeError('RLPROBE_SCHEMA_TOO_NEW', `${dir} was recorded with format schema_version ${version}, but this rlprobe reads up to ${SCHEMA_VERSION}: upgrade rlprobe (npm install rlprobe@latest) to compact it`);
  }
  if (version !== SCHEMA_VERSION) {
    throw new RlprobeError('RLPROBE_SCHEMA_UNSUPPORTED', `${dir} has format schema_version ${JSON.stringify(version)}; compaction only merges schema_version ${SCHEMA_VERSION} recordings (older ones are read through migration, never rewritten)`);
  }
}

/** Compacts one unit (atomic, idempotent, crash-safe; only merges part files). */
export function compactUnit(unit: CompactUnit): CompactResult {
  const compact = { steps: compactSteps, samples: compactSamples, spans: compactSpans }[unit.what];
  const r = native(() => compact(unit.dir));
  return { partsMerged: r.partsMerged, leftoversRemoved: r.leftoversRemoved, rows: r.rows, bytes: r.bytes };
}

/**
 * Compacts a run: step parts into steps.parquet, sample parts into 4096-row shards and
 * span parts into spans/spans.parquet (each span once, at its last write), in
 * the run directory and every rank directory. Atomic, idempotent, safe on a crashed run
 * and on one a recorder is still writing. Only merges part files; never rewrites data.
 */
export function compactRun(runDir: string, onProgress?: (p: CompactProgress) => void): RunCompaction {
  const units = compactUnits(runDir);
  const out: CompactProgress[] = [];
  units.forEach((unit, i) => {
    const p = { done: i + 1, total: units.length, unit, result: compactUnit(unit) };
    out.push(p);
    onProgress?.(p);
  });
  return { steps: out[0].result, samples: out[1].result, spans: out[2]?.unit.rank === 0 && out[2].unit.what === 'spans' ? out[2].result : null, units: out };
}

export interface RunCompaction {
  /** The run directory's own (rank 0) steps and samples. */
  steps: CompactResult;
  samples: CompactResult;
  /** Its spans (each span once, in spans/spans.parquet), or null when it recorded none. */
  spans: CompactResult | null;
  /** Every unit, rank directories included, in order. */
  units: CompactProgress[];
}
