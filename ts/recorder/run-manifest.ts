/**
 * A recording's manifest.json as the recorder sees it: an existing one is checked before
 * resuming into it (same format version only), a new one is written atomically.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError, native } from '../errors.js';
import { writeFileAtomic } from '../native.js';
import { SCHEMA_VERSION } from '../schema/manifest.js';
import type { RunManifest } from '../schema/manifest.js';
import { captureEnvironment } from './environment.js';
import type { ResolvedRecorderOptions } from './options.js';

function defaultRunId(): string {
  const d = new Date();
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
  return `run-${stamp}-${randomBytes(3).toString('hex')}`;
}

/** The run id of the recording already in `runDir` (checked: resumable), or null for a new run. */
export function resumableRun(runDir: string): { runId: string } | null {
  const file = path.join(runDir, 'manifest.json');
  if (!existsSync(file)) return null;
  // resuming: only into a recording of this format version, never mixing two
  let version: unknown;
  let runId: unknown;
  try {
    ({ schema_version: version, run_id: runId } = JSON.parse(readFileSync(file, 'utf8')) as { schema_version?: unknown; run_id?: unknown });
  } catch (error) {
    throw new RlprobeError('RLPROBE_BAD_MANIFEST', `cannot resume ${runDir}: manifest.json is not valid JSON (${(error as Error).message})`);
  }
  if (version !== SCHEMA_VERSION) {
    const newer = typeof version === 'number' && version > SCHEMA_VERSION;
    throw new RlprobeError(
      newer ? 'RLPROBE_SCHEMA_TOO_NEW' : 'RLPROBE_SCHEMA_UNSUPPORTED',
      `cannot resume ${runDir}: it has format schema_version ${JSON.stringify(version)} and this rlprobe writes ${SCHEMA_VERSION}; record into a new directory${newer ? ' or upgrade rlprobe' : ''}`,
    );
  }
  // keyed span ids derive from the run id: a resumed run keeps its ids
  return { runId: typeof runId === 'string' ? runId : runDir };
}

/** Writes a new run's manifest.json atomically; returns its run id. */
export function writeNewManifest(runDir: string, o: Readonly<ResolvedRecorderOptions>): string {
  const manifest: RunManifest = {
    schema_version: SCHEMA_VERSION,
    run_id: o.runId ?? defaultRunId(),
    created_at: new Date().toISOString(),
    algorithm: o.algorithm,
    model_name: o.modelName,
    world_size: o.worldSize,
    trainer_config: o.trainerConfig,
    environment: o.captureEnvironment ? captureEnvironment() : {},
    notes: o.notes,
    extra: o.rank === 0 ? { ...o.manifestExtra } : { ...o.manifestExtra, rank: o.rank },
  };
  native(() => writeFileAtomic(path.join(runDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`));
  return manifest.run_id;
}
