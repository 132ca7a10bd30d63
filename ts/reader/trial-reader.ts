/**
 * Captured trials read back (docs/format.md#trials): each `trials/<key>/capture.json` of the
 * run and its ranks, filtered by step, ordered by step then capture key.
 */
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { loadOnDemand } from '../schema/on-demand.js';
import { captureDir, captureFilesDir, captureKeys, readCaptureManifest } from '../trials/capture-files.js';
import type { CaptureManifest } from '../trials/manifest.js';
import { parseQuery } from './query-parse.js';
import type * as TrialQueryModule from './trial-query.js';
import type { TrialQuery } from './trial-query.js';
import type { RankDir } from './rank-dirs.js';

export type { TrialQuery } from './trial-query.js';

/** A capture as read back: its manifest, where it lives, and the rank directory holding it. */
export interface TrialCapture extends CaptureManifest {
  rank: number;
  /** The recording directory holding it: the run, or its `rank-NNN/`. */
  run_dir: string;
  /** The capture directory, `<run>/trials/<key>`. */
  dir: string;
  /** Where its collected files are, under their trial-relative paths. */
  files_dir: string;
}

/** A capture whose manifest cannot be read (corrupt, or not a capture manifest): skipped, reported. */
export interface BrokenCapture {
  dir: string;
  error: string;
}

function shapeProblem(m: CaptureManifest): string | null {
  if (m === null || typeof m !== 'object') return 'not a JSON object';
  if (m.kind !== 'harbor_trial') return `kind ${JSON.stringify((m as { kind?: unknown }).kind)} is not harbor_trial`;
  if (!Number.isSafeInteger(m.step)) return 'no step';
  if (!m.trial || !m.ledger || !Array.isArray(m.ledger.entries) || !m.spans || !Array.isArray(m.trajectories) || !m.source) return 'incomplete (trial, ledger, spans, trajectories or source missing)';
  return null;
}

export function readTrialsOf(dirs: readonly RankDir[], query: TrialQuery = {}): { trials: TrialCapture[]; unfinished: string[]; broken: BrokenCapture[] } {
  const q = parseQuery(() => loadOnDemand<typeof TrialQueryModule>(import.meta.url, './trial-query.js').TrialQuerySchema, 'trials', query);
  const trials: TrialCapture[] = [];
  const unfinished: string[] = [];
  const broken: BrokenCapture[] = [];
  for (const { rank, dir } of dirs) {
    const keys = captureKeys(dir);
    unfinished.push(...keys.unfinished.map((k) => path.join(dir, 'trials', k)));
    for (const key of keys.finished) {
      let m: CaptureManifest;
      try {
        m = readCaptureManifest(dir, key);
      } catch (e) {
        // replaced between the listing and the read: it shows up on the next read
        if (e instanceof RlprobeError && e.code === 'RLPROBE_NOT_FOUND') continue;
        // one unreadable manifest must not hide every other capture of the run
        broken.push({ dir: path.join(dir, 'trials', key), error: (e as Error).message });
        continue;
      }
      const problem = shapeProblem(m);
      if (problem !== null) {
        broken.push({ dir: path.join(dir, 'trials', key), error: `capture.json: ${problem}` });
        continue;
      }
      if (q.step !== undefined && m.step !== q.step) continue;
      if (q.stepRange && (m.step < q.stepRange[0] || m.step > q.stepRange[1])) continue;
      if (q.sampleId !== undefined && m.sample_id !== q.sampleId) continue;
      trials.push({ ...m, rank, run_dir: dir, dir: captureDir(dir, key), files_dir: captureFilesDir(dir, key) });
    }
  }
  trials.sort((a, b) => a.step - b.step || a.rank - b.rank || (a.capture_key < b.capture_key ? -1 : a.capture_key > b.capture_key ? 1 : 0));
  return { trials, unfinished, broken };
}

/**
 * The capture `ref` names: its capture key, its trial id, its trial name, or a prefix of
 * exactly one key. Throws RLPROBE_NOT_FOUND (none) or RLPROBE_INVALID_QUERY (ambiguous).
 */
export function findTrial(trials: readonly TrialCapture[], ref: string): TrialCapture {
  const exact = trials.filter((t) => t.capture_key === ref || t.trial.id === ref);
  if (exact.length === 1) return exact[0];
  const byName = trials.filter((t) => t.trial.name === ref);
  const candidates = exact.length > 1 ? exact : byName.length > 0 ? byName : trials.filter((t) => t.capture_key.startsWith(ref));
  if (candidates.length === 1) return candidates[0];
  if (candidates.length === 0) throw new RlprobeError('RLPROBE_NOT_FOUND', `no captured trial ${JSON.stringify(ref)} (give a capture key, trial id or trial name; \`probe trial list\` shows them)`);
  throw new RlprobeError('RLPROBE_INVALID_QUERY', `${JSON.stringify(ref)} names ${candidates.length} captures (${candidates.map((t) => `${t.capture_key} at step ${t.step}`).join(', ')}): give a capture key`);
}
