import type { NativeColumn, NativeStepTable } from '../native.js';
import { EXTRA_PREFIX, REWARD_COMPONENT_PREFIX } from '../schema/step-record.js';

/**
 * Columnar access to a run's steps: every numeric series as a Float64Array aligned to
 * `steps`, a missing value as NaN. (Use `RunReader.steps()` to tell a logged NaN from a
 * missing value.)
 */
export class RunView {
  /** The step of each row. */
  readonly steps: Float64Array;
  private readonly byName = new Map<string, NativeColumn>();
  private readonly cache = new Map<string, Float64Array>();

  constructor(table: NativeStepTable) {
    for (const col of table.columns) this.byName.set(col.name, col);
    this.steps = this.byName.get('step')?.values ?? new Float64Array(0);
  }

  get length(): number {
    return this.steps.length;
  }

  /** Column names in the table's order (fixed, known fields, components, extras). */
  columns(): string[] {
    return [...this.byName.keys()];
  }

  /** Scalar series names: everything but `step` and list columns. */
  seriesNames(): string[] {
    return [...this.byName.values()].filter((c) => c.kind !== 'list_f64' && c.name !== 'step').map((c) => c.name);
  }

  /** Reward component names (`reward_component.<name>` columns), in table order. */
  componentNames(): string[] {
    return this.columns().filter((c) => c.startsWith(REWARD_COMPONENT_PREFIX)).map((c) => c.slice(REWARD_COMPONENT_PREFIX.length));
  }

  /** Extra metric names (`extra.<name>` columns), in table order. */
  extraNames(): string[] {
    return this.columns().filter((c) => c.startsWith(EXTRA_PREFIX)).map((c) => c.slice(EXTRA_PREFIX.length));
  }

  /** The series of reward component `name`. */
  component(name: string): Float64Array {
    return this.series(`${REWARD_COMPONENT_PREFIX}${name}`);
  }

  /** The series of extra metric `name`. */
  extra(name: string): Float64Array {
    return this.series(`${EXTRA_PREFIX}${name}`);
  }

  /** Row count of values that are present (not null) in `name`. */
  presentCount(name: string): number {
    const col = this.byName.get(name);
    if (!col) return 0;
    if (!col.valid) return col.kind === 'list_f64' ? (col.offsets?.length ?? 1) - 1 : col.values.length;
    let n = 0;
    for (const v of col.valid) n += v;
    return n;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The series `name` (e.g. `loss`, `reward_component.format`, `extra.my_metric`). */
  series(name: string): Float64Array {
    const cached = this.cache.get(name);
    if (cached) return cached;
    const col = this.byName.get(name);
    // the native side stores NaN in null rows, so a scalar column is the series as is
    const out = !col || col.kind === 'list_f64' ? new Float64Array(this.length).fill(NaN) : col.values;
    this.cache.set(name, out);
    return out;
  }
}
