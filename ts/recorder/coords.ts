/**
 * A unit's coordinates and labels (`recorder.unit(coords, fn)`): checked and merged once
 * when the unit is entered, the inner unit winning per key, labels made JSON once.
 */

/** What `unit(…)` binds. `sample` and `group` become the labels `sample` and `group`. */
export interface UnitCoords {
  step?: number;
  sample?: string | number;
  group?: string | number;
  [label: string]: string | number | boolean | undefined;
}

/** A unit's resolved coordinates (nested units merged, the inner winning per key). */
export interface Coords {
  readonly step: number | null;
  readonly sample: string | null;
  readonly group: string | null;
  readonly labels: Readonly<Record<string, string>>;
  /** `labels` as a JSON object, made once per unit; null when there are none. */
  readonly labelsJson: string | null;
}

/** A field `unit` refused (reported as a bad_record event; the unit goes on without it). */
export interface RefusedCoord {
  field: string;
  reason: string;
  value: unknown;
}

export function labelsJsonOf(labels: Readonly<Record<string, string>>): string | null {
  for (const _ in labels) return JSON.stringify(labels);
  return null;
}

/** Merges `given` over `outer`; bad fields are left out and listed in `refused`. */
export function mergeCoords(outer: Coords | null, given: UnitCoords, refused: RefusedCoord[]): Coords {
  let step = outer?.step ?? null;
  const labels: Record<string, string> = { ...outer?.labels };
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    refused.push({ field: 'unit', reason: 'expected an object of coordinates and labels', value: given });
    return outer ?? { step: null, sample: null, group: null, labels: {}, labelsJson: null };
  }
  for (const key of Object.keys(given)) {
    const v = given[key];
    if (v === undefined) continue;
    if (key === 'step') {
      if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) step = v;
      else refused.push({ field: 'step', reason: 'expected a non-negative integer', value: v });
      continue;
    }
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) {
      labels[key] = String(v);
    } else {
      refused.push({ field: key, reason: 'expected a label value that is a string, a finite number or a boolean', value: v });
    }
  }
  return {
    step,
    sample: labels.sample ?? null,
    group: labels.group ?? null,
    labels,
    labelsJson: labelsJsonOf(labels),
  };
}
