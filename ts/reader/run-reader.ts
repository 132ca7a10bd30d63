import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError, native } from '../errors.js';
import { readSteps, stepColumns, stepFiles } from '../native.js';
import type { NativeStepTable } from '../native.js';
import type { RunEvent } from '../schema/event.js';
import { RunManifestSchema, SCHEMA_VERSION } from '../schema/manifest.js';
import type { RunManifest } from '../schema/manifest.js';
import type { StoredStepRecord } from '../schema/step-record.js';
import { readEventsFile } from './events-file.js';
import { RunView } from './run-view.js';
import { rowsOf } from './step-table.js';

/** How the steps are stored right now. */
export type StepLayout = 'compacted' | 'parts' | 'mixed' | 'empty';

export interface StepFileInfo {
  path: string;
  rows: number;
  bytes: number;
  compacted: boolean;
}

/**
 * Reads a recording — cleanly closed, still live, or crashed. Steps are read each exactly
 * once whatever the layout (compacted, part files, or the mix a crash mid-compaction
 * leaves).
 */
export class RunReader {
  readonly runDir: string;
  readonly manifest: RunManifest;

  private constructor(runDir: string, manifest: RunManifest) {
    this.runDir = runDir;
    this.manifest = manifest;
  }

  /**
   * Opens a run directory. Throws RlprobeError: RLPROBE_NOT_A_RUN (no manifest.json),
   * RLPROBE_BAD_MANIFEST, or RLPROBE_SCHEMA_TOO_NEW (recorded by a newer rlprobe).
   */
  static open(runDir: string): RunReader {
    const dir = path.resolve(runDir);
    const file = path.join(dir, 'manifest.json');
    if (!existsSync(file)) {
      throw new RlprobeError('RLPROBE_NOT_A_RUN', `not a run directory (no manifest.json): ${dir}`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file} is not valid JSON: ${(error as Error).message}`);
    }
    const version = (raw as { schema_version?: unknown } | null)?.schema_version;
    if (typeof version === 'number' && version > SCHEMA_VERSION) {
      throw new RlprobeError(
        'RLPROBE_SCHEMA_TOO_NEW',
        `${dir} was recorded with format schema_version ${version}, but this rlprobe reads up to ${SCHEMA_VERSION}: upgrade rlprobe (npm install rlprobe@latest) to read it`,
      );
    }
    const parsed = RunManifestSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: ${issue.path.join('.') || 'manifest'}: ${issue.message}`);
    }
    return new RunReader(dir, parsed.data);
  }

  /** Where the steps are: files in read order (footer row counts), leftovers, layout. */
  storage(): { files: StepFileInfo[]; absorbedLeftovers: number; layout: StepLayout } {
    const info = native(() => stepFiles(this.runDir));
    const compacted = info.files.some((f) => f.compacted);
    const parts = info.files.some((f) => !f.compacted) || info.absorbedLeftovers > 0;
    const layout: StepLayout = compacted && parts ? 'mixed' : compacted ? 'compacted' : parts ? 'parts' : 'empty';
    return { files: info.files, absorbedLeftovers: info.absorbedLeftovers, layout };
  }

  /** The files holding steps, in read order, with footer row counts. */
  stepFiles(): StepFileInfo[] {
    return this.storage().files;
  }

  /** Parts a crash mid-compaction left next to the steps.parquet that already holds them. */
  absorbedLeftovers(): number {
    return this.storage().absorbedLeftovers;
  }

  layout(): StepLayout {
    return this.storage().layout;
  }

  /** Step columns (name and kind) from the files' footers, without reading data. */
  stepColumns(): Array<{ name: string; kind: string }> {
    return native(() => stepColumns(this.runDir));
  }

  /** The step table as columns (optionally only `columns`). */
  stepTable(columns?: string[]): NativeStepTable {
    return native(() => readSteps(this.runDir, columns));
  }

  /** Every step as a record, dicts (`reward_components`, `extra`) and lists rebuilt. */
  steps(): StoredStepRecord[] {
    return rowsOf(this.stepTable());
  }

  /** Columnar view: `series(name)` as Float64Array aligned to the steps. */
  view(columns?: string[]): RunView {
    return new RunView(this.stepTable(columns?.includes('step') ? columns : columns && ['step', ...columns]));
  }

  /** Sub-recordings of non-zero ranks (`rank-NNN/` with a manifest), in rank order. */
  rankDirs(): string[] {
    let names: string[];
    try {
      names = readdirSync(this.runDir);
    } catch {
      return [];
    }
    return names
      .filter((n) => /^rank-\d+$/.test(n) && existsSync(path.join(this.runDir, n, 'manifest.json')))
      .sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)))
      .map((n) => path.join(this.runDir, n));
  }

  /**
   * Events of every rank (rank-attributed), ordered by time; a torn or garbage line is
   * skipped.
   */
  events(): RunEvent[] {
    return this.eventsWithDiagnostics().events;
  }

  /** Events plus how many lines were skipped as unreadable. */
  eventsWithDiagnostics(): ReturnType<typeof readEventsFile> {
    const own = readEventsFile(path.join(this.runDir, 'events.jsonl'));
    const ranks = this.rankDirs();
    if (ranks.length === 0) return own;
    const all = [own, ...ranks.map((d) => readEventsFile(path.join(d, 'events.jsonl')))];
    // stable sort: events with equal timestamps keep their file order
    const events = all.flatMap((r) => r.events).sort((a, b) => a.timestamp - b.timestamp);
    return { events, skippedLines: all.reduce((n, r) => n + r.skippedLines, 0) };
  }

  /** Last modification time of any step or event file (ms since epoch), or null. */
  lastWriteMs(): number | null {
    let last: number | null = null;
    const candidates = [path.join(this.runDir, 'events.jsonl'), ...this.stepFiles().map((f) => f.path)];
    for (const f of candidates) {
      try {
        const t = statSync(f).mtimeMs;
        if (last === null || t > last) last = t;
      } catch {
        // vanished (compaction): ignore
      }
    }
    return last;
  }
}
