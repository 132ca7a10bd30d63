/**
 * Schema-version policy (format: Schema versioning), applied on read:
 * - a recording of the current version is read as is;
 * - an older one is migrated on read through a chain of one-version steps, in memory
 *   only (recordings are never rewritten in place);
 * - a newer one is refused, telling the user to upgrade;
 * - unknown columns are ignored and missing ones read as absent (not a migration: that is
 *   how every reader treats additive changes).
 *
 * schema_version 1 is the first version rlprobe released (as did the Python package), so
 * the built-in chain is empty; the first breaking change adds its step here, and the tests
 * exercise the mechanism with a synthetic version 0.
 */
import { RlprobeError } from '../errors.js';
import { SCHEMA_VERSION } from '../schema/manifest.js';

type Json = Record<string, unknown>;

/** One step from `from` to `from + 1`. Every part is optional. */
export interface Migration {
  from: number;
  /** One line for `probe info`: what changed. */
  describe: string;
  /** Rewrites the raw manifest (its `schema_version` is set by the chain). */
  manifest?: (raw: Json) => Json;
  /** Step columns renamed by this version: old name → new name. */
  stepColumns?: Record<string, string>;
  /** Sample columns renamed by this version: old name → new name. */
  sampleColumns?: Record<string, string>;
  /** Rewrites one raw event object. */
  event?: (raw: Json) => Json;
}

/** The built-in chain (empty: see above). */
export const MIGRATIONS: readonly Migration[] = [];

/** What reading a recording of some version takes: the composed migration steps. */
export class ReadAdapter {
  readonly fromVersion: number;
  readonly steps: readonly Migration[];
  /** Physical (on-disk) name → current name, composed over the chain. */
  readonly stepRenames: ReadonlyMap<string, string>;
  readonly sampleRenames: ReadonlyMap<string, string>;

  constructor(fromVersion: number, steps: readonly Migration[]) {
    this.fromVersion = fromVersion;
    this.steps = steps;
    this.stepRenames = compose(steps.map((m) => m.stepColumns));
    this.sampleRenames = compose(steps.map((m) => m.sampleColumns));
  }

  get migrated(): boolean {
    return this.steps.length > 0;
  }

  manifest(raw: Json): Json {
    let m = raw;
    for (const step of this.steps) m = step.manifest ? step.manifest(m) : m;
    return this.migrated ? { ...m, schema_version: SCHEMA_VERSION } : m;
  }

  event(raw: Json): Json {
    let e = raw;
    for (const step of this.steps) e = step.event ? step.event(e) : e;
    return e;
  }

  /** The on-disk name of a current step column. */
  physicalStepColumn(name: string): string {
    return reverse(this.stepRenames, name);
  }

  currentStepColumn(physical: string): string {
    return this.stepRenames.get(physical) ?? physical;
  }

  physicalSampleColumn(name: string): string {
    return reverse(this.sampleRenames, name);
  }

  currentSampleColumn(physical: string): string {
    return this.sampleRenames.get(physical) ?? physical;
  }
}

function compose(maps: Array<Record<string, string> | undefined>): Map<string, string> {
  // physical → current: follow each name through every later rename
  const out = new Map<string, string>();
  maps.forEach((map, i) => {
    for (const [oldName, newName] of Object.entries(map ?? {})) {
      let name = newName;
      for (const later of maps.slice(i + 1)) name = later?.[name] ?? name;
      if (![...out.values()].includes(oldName)) out.set(oldName, name);
    }
  });
  for (const [k, v] of out) if (k === v) out.delete(k);
  return out;
}

function reverse(map: ReadonlyMap<string, string>, name: string): string {
  for (const [physical, current] of map) if (current === name) return physical;
  return name;
}

/**
 * The adapter for a recording of `version`, or an RlprobeError: SCHEMA_TOO_NEW (upgrade
 * rlprobe) or SCHEMA_UNSUPPORTED (an older version no migration reaches).
 */
export function planRead(version: number, dir: string, migrations: readonly Migration[] = MIGRATIONS): ReadAdapter {
  if (version > SCHEMA_VERSION) {
    throw new RlprobeError(
      'RLPROBE_SCHEMA_TOO_NEW',
      `${dir} was recorded with format schema_version ${version}, but this rlprobe reads up to ${SCHEMA_VERSION}: upgrade rlprobe (npm install rlprobe@latest) to read it`,
    );
  }
  const steps: Migration[] = [];
  for (let v = version; v < SCHEMA_VERSION; v++) {
    const step = migrations.find((m) => m.from === v);
    if (!step) {
      throw new RlprobeError(
        'RLPROBE_SCHEMA_UNSUPPORTED',
        `${dir} was recorded with format schema_version ${version}, and this rlprobe has no migration from version ${v} to ${v + 1}`,
      );
    }
    steps.push(step);
  }
  return new ReadAdapter(version, steps);
}
