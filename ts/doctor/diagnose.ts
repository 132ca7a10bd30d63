import { native, nativeAsync } from '../errors.js';
import { diagnoseRun, diagnoseRunAsync } from '../native.js';
import type { NativeDiagnosis, NativeDoctorOptions } from '../native.js';
import type { RunReader } from '../reader/run-reader.js';
import { findingOf } from './finding.js';
import type { Finding } from './finding.js';

export interface DiagnoseOptions {
  /** Keep findings whose onset is at or after this step. */
  since?: number;
  /** Read per-sample records for evidence (default true). */
  samples?: boolean;
}

/** A detector that had no usable input: missing is not healthy. */
export interface SkippedDetector {
  detector: string;
  codes: string[];
  reason: string;
}

export interface Diagnosis {
  run_dir: string;
  /** Logged points (step rows) diagnosed. */
  points: number;
  samples: number;
  /** Why no sample could be read (a damaged file, named); the findings then carry no sample evidence. */
  samples_error: string | null;
  /** Most severe first. */
  findings: Finding[];
  skipped: SkippedDetector[];
  ran: string[];
}

/**
 * What an imported run's manifest (`extra.source`, written by ts/import/) tells the doctor:
 * the printing resolution of rounded columns (named through `column`, for migrated runs)
 * and whether `kl_mean` is a sequence-level KL.
 */
export function importHints(
  extra: Record<string, unknown>,
  column: (name: string) => string = (name) => name,
): { resolution?: Record<string, number>; klPerToken?: boolean } {
  const source = extra.source as { resolution?: unknown; kl_per_token?: unknown } | undefined;
  if (!source || typeof source !== 'object') return {};
  const resolution: Record<string, number> = {};
  if (source.resolution && typeof source.resolution === 'object') {
    for (const [k, v] of Object.entries(source.resolution as Record<string, unknown>)) {
      if (typeof v === 'number' && Number.isFinite(v) && v > 0) resolution[column(k)] = v;
    }
  }
  return { resolution, klPerToken: source.kl_per_token === false ? false : undefined };
}

/** The native options for `reader` (import hints, renames of a migrated recording). */
function nativeOptions(reader: RunReader, options: DiagnoseOptions): NativeDoctorOptions {
  const renames: Record<string, string> = {};
  if (reader.adapter.migrated) {
    for (const c of reader.stepColumns()) {
      const physical = reader.adapter.physicalStepColumn(c.name);
      if (physical !== c.name) renames[physical] = c.name;
    }
  }
  return {
    since: options.since,
    samples: options.samples ?? true,
    renames,
    ...importHints(reader.manifest.extra, (c) => reader.adapter.currentStepColumn(c)),
  };
}

function diagnosisOf(reader: RunReader, d: NativeDiagnosis): Diagnosis {
  return {
    run_dir: reader.runDir,
    points: d.points,
    samples: d.samples,
    samples_error: d.samplesError ?? null,
    findings: d.findings.map(findingOf),
    skipped: d.skipped,
    ran: d.ran,
  };
}

/** Runs every detector over the run (rank 0's steps and samples). */
export function diagnose(reader: RunReader, options: DiagnoseOptions = {}): Diagnosis {
  return diagnosisOf(reader, native(() => diagnoseRun(reader.runDir, nativeOptions(reader, options))));
}

/** `diagnose` off the JS thread (on the libuv pool): several runs diagnose side by side. */
export async function diagnoseAsync(reader: RunReader, options: DiagnoseOptions = {}): Promise<Diagnosis> {
  const opts = nativeOptions(reader, options);
  return diagnosisOf(reader, await nativeAsync(() => diagnoseRunAsync(reader.runDir, opts)));
}
