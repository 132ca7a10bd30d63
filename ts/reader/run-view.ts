import type { NativeColumn, NativeStepTable } from '../native.js';

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
