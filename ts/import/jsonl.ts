/**
 * `probe import jsonl`: any JSON Lines metrics log, one object per line, mapped onto step
 * columns by a map:
 *
 *   { "step": "global_step",                     // source key or dotted path of the step
 *     "columns": { "train/kl": "kl_mean",        // source key → StepRecord field,
 *                  "rew/format": "reward_component.format",   // reward_component.<name>
 *                  "eval/acc": "extra.eval/acc" },            // or extra.<name>
 *     "resolution": { "train/kl": 0.001 },       // source values printed rounded (optional)
 *     "algorithm": "grpo",                       // optional
 *     "nulls": "missing",                        // or "nan" (orjson writes NaN as null)
 *     "kl_per_token": true }                     // false: kl_mean is a per-sequence KL
 *
 * Nested objects are flattened to dotted keys; unmapped numeric keys land in
 * `extra.<key>`; Python's `NaN`/`Infinity` tokens are read as such.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { z } from 'zod';

import { RlprobeError } from '../errors.js';
import { readError } from './read-error.js';
import { EXTRA_PREFIX, REWARD_COMPONENT_PREFIX, STEP_FIELDS } from '../schema/step-record.js';
import { SourceSteps, stepOf } from './mapping.js';
import type { FieldRule } from './mapping.js';
import { isPlainObject, parsePythonJson } from '../files/python-json.js';
import { importRun, readSourceLines } from './write-import.js';
import type { ImportOptions, ImportResult } from './write-import.js';

/** Scalar fields a map may target (kl_positional is a list). */
const SCALAR_FIELDS = new Set<string>(STEP_FIELDS.filter((f) => f !== 'kl_positional'));
/** int64 on disk: a fractional or non-finite value would be refused by the writer. */
const INTEGER_FIELDS = new Set(['nan_count', 'inf_count']);

function isStepColumn(target: string): boolean {
  return (
    SCALAR_FIELDS.has(target) ||
    [REWARD_COMPONENT_PREFIX, EXTRA_PREFIX].some((p) => target.startsWith(p) && target.length > p.length)
  );
}

export const JsonlMapSchema = z.strictObject({
  step: z.string().min(1),
  columns: z
    .record(
      z.string().min(1),
      z.string().refine(isStepColumn, { message: 'not a step column: expected a StepRecord field, reward_component.<name> or extra.<name>' }),
    )
    .default({}),
  resolution: z.record(z.string().min(1), z.number().positive()).default({}),
  algorithm: z.string().min(1).optional(),
  nulls: z.enum(['missing', 'nan']).default('missing'),
  /** false when the column mapped to kl_mean is a per-sequence KL (a sum over tokens). */
  kl_per_token: z.boolean().default(true),
});

export type JsonlMap = z.input<typeof JsonlMapSchema>;
type ResolvedMap = z.output<typeof JsonlMapSchema>;

export interface JsonlImportOptions extends ImportOptions {
  /** The map: a path to map.json, or the map itself. */
  map: string | JsonlMap;
}

function show(value: unknown): string {
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}

/** Validates the map; a bad one throws RlprobeError naming the field and the value. */
function resolveMap(map: string | JsonlMap): ResolvedMap {
  const where = typeof map === 'string' ? path.resolve(map) : 'map';
  let input: unknown = map;
  if (typeof map === 'string') {
    let text: string;
    try {
      text = readFileSync(map, 'utf8');
    } catch (error) {
      throw readError(where, error);
    }
    try {
      input = JSON.parse(text);
    } catch (error) {
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `${where}: not valid JSON (${(error as Error).message})`);
    }
  }
  const parsed = JsonlMapSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue.code === 'unrecognized_keys') {
    const at = issue.path.length ? `${issue.path.join('.')}: ` : '';
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `${where}: ${at}unknown key ${show(issue.keys[0])} (expected step, columns, resolution, algorithm, nulls, kl_per_token)`);
  }
  let value: unknown = input;
  for (const key of issue.path) value = isPlainObject(value) ? value[key as string] : undefined;
  // columns["train/kl"] reads better than columns.train/kl
  const field = issue.path.map((p, i) => (i === 0 ? String(p) : `[${JSON.stringify(p)}]`)).join('') || 'map';
  throw new RlprobeError('RLPROBE_INVALID_OPTION', `${where}: ${field}: ${issue.message} (got ${show(value)})`);
}

/** The value at `key`: a top-level key as is, else a dotted path into nested objects. */
function lookup(entry: Record<string, unknown>, key: string): unknown {
  if (Object.hasOwn(entry, key)) return entry[key];
  let value: unknown = entry;
  for (const part of key.split('.')) value = isPlainObject(value) ? value[part] : undefined;
  return value;
}

/** Numeric leaves of `entry` by dotted key; null as NaN or left out. */
function flatten(entry: Record<string, unknown>, prefix: string, nullAsNaN: boolean, out: Map<string, number>): Map<string, number> {
  for (const [key, value] of Object.entries(entry)) {
    const name = prefix + key;
    if (typeof value === 'number') out.set(name, value);
    else if (value === null && nullAsNaN) out.set(name, NaN);
    else if (isPlainObject(value)) flatten(value, `${name}.`, nullAsNaN, out);
  }
  return out;
}

/** Imports a JSON Lines metrics log into a new run directory, mapped by `options.map`. */
export function importJsonl(file: string, outDir: string, options: JsonlImportOptions): ImportResult {
  const map = resolveMap(options.map);
  // each target takes the first of its sources (in map order) a step has: aliases work
  const byTarget = new Map<string, string[]>();
  for (const [source, target] of Object.entries(map.columns)) byTarget.set(target, [...(byTarget.get(target) ?? []), source]);
  const fields: FieldRule[] = [...byTarget];
  return importRun('jsonl', file, outDir, options, (source) => {
    const steps = new SourceSteps();
    const sha256 = readSourceLines(source, (line, lineNo) => {
      if (line.trim() === '') return;
      const where = `${source}:${lineNo}`;
      let entry: unknown;
      try {
        entry = parsePythonJson(line);
      } catch {
        steps.skipped++; // e.g. a line torn by a crash
        return;
      }
      const rawStep = isPlainObject(entry) ? lookup(entry, map.step) : undefined;
      if (rawStep === undefined || rawStep === null) {
        steps.skipped++;
        return;
      }
      const step = stepOf(rawStep, where);
      const metrics = flatten(entry as Record<string, unknown>, '', map.nulls === 'nan', new Map());
      metrics.delete(map.step);
      for (const [key, value] of metrics) {
        const target = map.columns[key];
        if (target !== undefined && INTEGER_FIELDS.has(target) && !Number.isSafeInteger(value)) {
          throw new RlprobeError('RLPROBE_IMPORT_FAILED', `${where}: ${key} (→ ${target}) must be an integer count (got ${value})`);
        }
        steps.set(step, key, value, map.resolution[key]);
      }
      if (metrics.size === 0) steps.skipped++;
    });
    return { ...steps.map({ fields }), sha256, skippedLines: steps.skipped, algorithm: map.algorithm ?? 'unknown', klPerToken: map.kl_per_token };
  });
}
