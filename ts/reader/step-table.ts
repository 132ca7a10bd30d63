import type { NativeColumn, NativeStepTable } from '../native.js';
import { EXTRA_PREFIX, REWARD_COMPONENT_PREFIX } from '../schema/step-record.js';
import type { StoredStepRecord } from '../schema/step-record.js';

function isValid(col: NativeColumn, row: number): boolean {
  return col.valid === undefined || col.valid === null || col.valid[row] === 1;
}

/** Rebuilds StepRecord objects (dicts and lists included) from the columnar table. */
export function rowsOf(table: NativeStepTable): StoredStepRecord[] {
  const out: StoredStepRecord[] = new Array(table.rows);
  for (let r = 0; r < table.rows; r++) out[r] = { step: NaN };
  for (const col of table.columns) {
    const name = col.name;
    const component = name.startsWith(REWARD_COMPONENT_PREFIX) ? name.slice(REWARD_COMPONENT_PREFIX.length) : null;
    const extra = name.startsWith(EXTRA_PREFIX) ? name.slice(EXTRA_PREFIX.length) : null;
    for (let r = 0; r < table.rows; r++) {
      if (!isValid(col, r)) continue;
      const rec = out[r] as Record<string, unknown> & StoredStepRecord;
      let value: number | number[];
      if (col.kind === 'list_f64') {
        const offsets = col.offsets!;
        value = Array.from(col.values.subarray(offsets[r], offsets[r + 1]));
      } else {
        value = col.values[r];
      }
      if (component !== null) (rec.reward_components ??= {})[component] = value as number;
      else if (extra !== null) (rec.extra ??= {})[extra] = value as number;
      else rec[name] = value;
    }
  }
  return out;
}
