/**
 * What every importer shares between reading a source and writing the run: source metrics
 * collected per step, then mapped onto step columns (StepRecord fields,
 * `reward_component.<name>`, `extra.<name>`).
 */
import { RlprobeError } from '../errors.js';
import { EXTRA_PREFIX, REWARD_COMPONENT_PREFIX } from '../schema/step-record.js';
import type { StepRecord } from '../schema/step-record.js';

/** A step column fed by the first of `sources` a step has (a source may feed several columns). */
export type FieldRule = readonly [column: string, sources: readonly string[]];

export interface MappingRules {
  fields: readonly FieldRule[];
  /** The column of a source key no field rule took (e.g. a reward component); null: `extra.<key>`. */
  dynamic?: (key: string) => string | null;
}

export interface MappedSteps {
  /** One record per step, in step order. */
  records: StepRecord[];
  /** Step columns written, in first-seen order. */
  columns: string[];
  /** Column → absolute printing resolution, for columns whose source values were rounded. */
  resolution: Record<string, number>;
}

/**
 * `rules` for source keys that carry `prefix` (TensorBoard's `train/reward` for TRL's
 * `reward`). A column the rules give a key by its own name (`extra.…`) is left to the
 * default `extra.<key>`: the prefixed key is the name a person knows.
 */
export function rulesUnderPrefix(rules: MappingRules, prefix: string): MappingRules {
  return {
    fields: rules.fields.map(([column, sources]): FieldRule => [column, sources.map((s) => prefix + s)]),
    dynamic: (key) => {
      if (!key.startsWith(prefix)) return null;
      const column = rules.dynamic?.(key.slice(prefix.length)) ?? null;
      return column?.startsWith(EXTRA_PREFIX) ? null : column;
    },
  };
}

/** The step of a source row: a non-negative integer, else an error naming where. */
export function stepOf(value: unknown, where: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  const shown = typeof value === 'number' ? String(value) : JSON.stringify(value);
  throw new RlprobeError('RLPROBE_IMPORT_FAILED', `${where}: step must be a non-negative integer (got ${shown})`);
}

/**
 * Source metrics by step. Rows of one step merge, a later value of a key winning: trainers
 * log one step in several parts (training, eval), and a resumed run repeats steps.
 */
export class SourceSteps {
  private readonly steps = new Map<number, Map<string, number>>();
  /** Source key → the coarsest resolution any of its values was printed with. */
  private readonly printed = new Map<string, number>();
  /** Non-empty lines (or entries) that yielded no metric. */
  skipped = 0;

  set(step: number, key: string, value: number, resolution?: number): void {
    if (key === '') return; // cannot name a column
    let row = this.steps.get(step);
    if (row === undefined) this.steps.set(step, (row = new Map()));
    row.set(key, value);
    if (resolution !== undefined) this.printed.set(key, Math.max(this.printed.get(key) ?? 0, resolution));
  }

  get size(): number {
    return this.steps.size;
  }

  /** Every source key seen (for inferring the algorithm). */
  keys(): Set<string> {
    const keys = new Set<string>();
    for (const row of this.steps.values()) for (const key of row.keys()) keys.add(key);
    return keys;
  }

  map(rules: MappingRules): MappedSteps {
    const columns = new Set<string>();
    const resolution: Record<string, number> = {};
    const records: StepRecord[] = [];
    for (const step of [...this.steps.keys()].sort((a, b) => a - b)) {
      const row = this.steps.get(step)!;
      const out = new Map<string, number>();
      const taken = new Set<string>();
      const put = (column: string, key: string) => {
        out.set(column, row.get(key)!);
        columns.add(column);
        const r = this.printed.get(key);
        if (r !== undefined) resolution[column] = Math.max(resolution[column] ?? 0, r);
      };
      for (const [column, sources] of rules.fields) {
        const key = sources.find((s) => row.has(s));
        if (key === undefined) continue;
        put(column, key);
        taken.add(key);
      }
      for (const key of row.keys()) {
        if (taken.has(key)) continue;
        const wanted = rules.dynamic?.(key) ?? null;
        const column = wanted !== null && !out.has(wanted) ? wanted : EXTRA_PREFIX + key;
        if (!out.has(column)) put(column, key);
      }
      records.push(toRecord(step, out));
    }
    return { records, columns: [...columns], resolution };
  }
}

function toRecord(step: number, columns: Map<string, number>): StepRecord {
  const record: StepRecord = { step };
  const components: Record<string, number> = {};
  const extra: Record<string, number> = {};
  for (const [column, value] of columns) {
    if (column.startsWith(REWARD_COMPONENT_PREFIX)) components[column.slice(REWARD_COMPONENT_PREFIX.length)] = value;
    else if (column.startsWith(EXTRA_PREFIX)) extra[column.slice(EXTRA_PREFIX.length)] = value;
    else record[column] = value;
  }
  if (Object.keys(components).length > 0) record.reward_components = components;
  if (Object.keys(extra).length > 0) record.extra = extra;
  return record;
}
