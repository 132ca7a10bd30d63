/**
 * Schema-version policy (docs/format.md#schema-versioning), applied on read:
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
import { SCHEMA_VERSION } from '../schema/schema-version.js';

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

/** Sample columns the Rust cursor filters on by their stored name. */
const SAMPLE_FILTER_COLUMNS = ['step', 'capture_reason', 'group_id'];

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
    for (const [physical, current] of this.sampleRenames) {
      if (SAMPLE_FILTER_COLUMNS.includes(current) || SAMPLE_FILTER_COLUMNS.includes(physical)) {
        // the Rust cursor filters on these names as stored; renaming one needs the cursor
        // to take physical names first
        throw new RlprobeError('RLPROBE_SCHEMA_UNSUPPORTED', `a migration renames the sample filter column ${physical} → ${current}, which this reader cannot filter on`);
      }
    }
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

/**
 * Physical → current names over a chain of renames, step by step: each step renames the
 * names the previous steps produced (so a swap within one step works, and a column
 * renamed twice ends under its last name).
 */
function compose(maps: Array<Record<string, string> | undefined>): Map<string, string> {
  // current name → physical name, starting from the identity for every name mentioned
  const physicalOf = new Map<string, string>();
  for (const map of maps) {
    const next = new Map<string, string>();
    const renamed = new Set(Object.keys(map ?? {}));
    for (const [current, physical] of physicalOf) if (!renamed.has(current)) next.set(current, physical);
    for (const [from, to] of Object.entries(map ?? {})) next.set(to, physicalOf.get(from) ?? from);
    physicalOf.clear();
    for (const [k, v] of next) physicalOf.set(k, v);
  }
  const out = new Map<string, string>();
  for (const [current, physical] of physicalOf) if (current !== physical) out.set(physical, current);
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
