import type { NativeSampleBatch, NativeSampleColumn } from '../native.js';
import { EXTRA_PREFIX, REWARD_COMPONENT_PREFIX } from '../schema/step-record.js';
import { SAMPLE_TEXT_FIELDS } from '../schema/sample-record.js';
import type { StoredSampleRecord } from '../schema/sample-record.js';

function valid(col: NativeSampleColumn, row: number): boolean {
  return col.valid === undefined || col.valid === null || col.valid[row] === 1;
}

/** A cell as the record field wants it (ids as text, lists as arrays, bools as booleans). */
function cell(col: NativeSampleColumn, row: number): unknown {
  switch (col.kind) {
    case 'text':
      return col.texts![row];
    case 'bool':
      return col.values![row] === 1;
    case 'int_list':
    case 'float_list': {
      const o = col.offsets!;
      return Array.from(col.values!.subarray(o[row], o[row + 1]));
    }
    default:
      return col.values![row];
  }
}

/** A labels cell (a JSON object of strings) as an object; null when it is not one. */
export function parseLabels(v: unknown): Record<string, string> | null {
  if (typeof v !== 'string') return null;
  try {
    const o = JSON.parse(v) as unknown;
    return o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, string>) : null;
  } catch {
    return null;
  }
}

/** Puts one non-null cell into a record, as a column of that name and kind holds it. */
export type SampleFieldSetter = (rec: Record<string, unknown>, v: unknown) => void;

/**
 * How a column's cells go into a record: reward components and extras into their dicts,
 * ids as text whatever the writer stored, `truncated` as a boolean, `labels` parsed (a
 * cell that is not a JSON object is left out). Shared by the batch and the table reads.
 */
export function sampleFieldSetter(name: string, kind: string): SampleFieldSetter {
  if (name.startsWith(REWARD_COMPONENT_PREFIX)) {
    const component = name.slice(REWARD_COMPONENT_PREFIX.length);
    return (rec, v) => {
      ((rec.reward_components ??= {}) as Record<string, unknown>)[component] = v;
    };
  }
  if (name.startsWith(EXTRA_PREFIX)) {
    const extra = name.slice(EXTRA_PREFIX.length);
    return (rec, v) => {
      ((rec.extra ??= {}) as Record<string, unknown>)[extra] = v;
    };
  }
  if (SAMPLE_TEXT_FIELDS.has(name) && kind !== 'text') return (rec, v) => void (rec[name] = String(v));
  if (name === 'truncated') return (rec, v) => void (rec[name] = typeof v === 'number' ? v !== 0 : v);
  if (name === 'labels') {
    return (rec, v) => {
      const labels = parseLabels(v);
      if (labels !== null) rec[name] = labels;
    };
  }
  return (rec, v) => void (rec[name] = v);
}

/**
 * Rebuilds sample records from a native batch. Whatever the writer (ours, the Python
 * package, an older rlprobe), ids come back as strings and the rank is filled in from the
 * directory when a row has none.
 */
export function sampleRowsOf(batch: NativeSampleBatch, dirRank: number): StoredSampleRecord[] {
  const out: StoredSampleRecord[] = new Array(batch.rows);
  for (let r = 0; r < batch.rows; r++) out[r] = { step: NaN, sample_id: '', rank: dirRank };
  for (const col of batch.columns) {
    const put = sampleFieldSetter(col.name, col.kind);
    for (let r = 0; r < batch.rows; r++) {
      if (!valid(col, r)) continue;
      const v = cell(col, r);
      if (v === null || v === undefined) continue;
      put(out[r] as unknown as Record<string, unknown>, v);
    }
  }
  return out;
}
