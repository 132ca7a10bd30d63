/**
 * `probe import verl`: a verl training log, either format, detected per line:
 * - the `file` tracking backend (JSON Lines, `{"step": N, "data": {...}}`; also a flat
 *   `{"step": N, "key": value, ...}`), written with `json.dumps` (NaN as the bare token
 *   `NaN`) or orjson (NaN and ±inf as `null`, read back as NaN);
 * - the `console` backend, `step:N - key:value - key:value ...`, possibly behind a Ray
 *   prefix such as `(TaskRunner pid=123)`. Older verl printed every value with `{:.3f}`,
 *   newer verl with `pprint.pformat` (full precision; numpy ≥ 2 scalars as `np.float64(x)`).
 * Anything else (vLLM and Ray chatter, tracebacks, blank lines) is skipped.
 */
import { SourceSteps, stepOf } from './mapping.js';
import type { MappingRules } from './mapping.js';
import { isPlainObject, parsePythonJson } from '../files/python-json.js';
import { importRun, readSourceLines } from './write-import.js';
import type { ImportOptions, ImportResult, ParsedImport } from './write-import.js';

/**
 * verl metric names (current and older) → step columns; the first present source wins.
 * Its TensorBoard tags are the same names (ts/import/tensorboard.ts).
 */
export const VERL_RULES: MappingRules = {
  fields: [
    ['reward_mean', ['critic/score/mean']],
    ['reward_max', ['critic/score/max']],
    ['reward_min', ['critic/score/min']],
    // KL as a loss term (GRPO-style use_kl_loss), else the KL penalty folded into the reward
    ['kl_mean', ['actor/kl_loss', 'critic/kl']],
    ['entropy_mean', ['actor/entropy', 'actor/entropy_loss']],
    ['clip_fraction', ['actor/pg_clipfrac']],
    ['adv_mean', ['critic/advantages/mean']],
    ['value_loss', ['critic/vf_loss']],
    ['value_explained_variance', ['critic/vf_explained_var']],
    ['value_clip_fraction', ['critic/vf_clipfrac']],
    ['loss', ['actor/pg_loss', 'actor/loss']],
    ['lr', ['actor/lr']],
    ['grad_norm', ['actor/grad_norm']],
    ['completion_len_mean', ['response_length/mean']],
    ['completion_len_max', ['response_length/max']],
    // responses that reached max_response_length
    ['truncation_rate', ['response_length/clip_ratio']],
    ['max_len_hit_frac', ['response_length/clip_ratio']],
    ['step_time_s', ['timing_s/step']],
    ['generation_time_s', ['timing_s/gen']],
    ['optimization_time_s', ['timing_s/update_actor']],
  ],
};

/** Resolution of verl's `{:.3f}` console values. */
const CONSOLE_RESOLUTION = 0.001;
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;
/** `step:N` at the start or after a prefix, then ` - key:value` pairs. */
const CONSOLE_LINE = /(?:^|\s)step:(\d+)(?: - (.*))?$/;
const NUMPY_SCALAR = /^(?:np|numpy)\.\w+\((.*)\)$/;
const DECIMAL = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;
/** How `{:.3f}` prints a finite value; a line of these is a rounded one. */
const THREE_DECIMALS = /^-?\d+\.\d{3}$/;
const NON_FINITE: Record<string, number> = { nan: NaN, inf: Infinity, '-inf': -Infinity };

/** A console value (`0.512`, `-0.000`, `nan`, `inf`, `1e-06`, `np.float64(0.5)`), or null. */
function consoleNumber(raw: string): number | null {
  const inner = NUMPY_SCALAR.exec(raw)?.[1] ?? raw;
  if (DECIMAL.test(inner)) return Number(inner);
  return Object.hasOwn(NON_FINITE, inner) ? NON_FINITE[inner] : null;
}

/** Adds a console line's metrics; false when it is no metrics line. */
function readConsoleLine(line: string, where: string, steps: SourceSteps): boolean {
  const m = CONSOLE_LINE.exec(line.replace(ANSI, '').trimEnd());
  if (m === null || m[2] === undefined) return false;
  const step = stepOf(Number(m[1]), where);
  const pairs: Array<[string, number]> = [];
  let rounded = true;
  for (const part of m[2].split(' - ')) {
    const colon = part.lastIndexOf(':');
    if (colon <= 0) continue;
    const raw = part.slice(colon + 1).trim();
    const value = consoleNumber(raw);
    if (value === null) continue;
    // one value printed otherwise than `{:.3f}` marks the line full precision
    if (Number.isFinite(value) && !THREE_DECIMALS.test(raw)) rounded = false;
    pairs.push([part.slice(0, colon).trim(), value]);
  }
  for (const [key, value] of pairs) steps.set(step, key, value, rounded ? CONSOLE_RESOLUTION : undefined);
  return pairs.length > 0;
}

/** Adds a JSON line's metrics; false when it holds no step or no metric. */
function readJsonLine(line: string, where: string, steps: SourceSteps): boolean {
  let entry: unknown;
  try {
    entry = parsePythonJson(line);
  } catch {
    return false; // e.g. a line torn by a crash
  }
  if (!isPlainObject(entry) || entry.step === undefined || entry.step === null) return false;
  const step = stepOf(entry.step, where);
  const nested = isPlainObject(entry.data);
  const data = nested ? (entry.data as Record<string, unknown>) : entry;
  let n = 0;
  for (const [key, value] of Object.entries(data)) {
    if (!nested && key === 'step') continue;
    const x = typeof value === 'number' ? value : value === null ? NaN : undefined;
    if (x === undefined) continue;
    steps.set(step, key, x);
    n++;
  }
  return n > 0;
}

/** ppo when a critic is evident; verl logs no advantage estimator, so otherwise 'unknown'. */
export function verlAlgorithm(keys: Set<string>): string {
  return [...keys].some((k) => k.startsWith('critic/vf_') || k.startsWith('critic/values/')) ? 'ppo' : 'unknown';
}

function parseVerl(file: string): ParsedImport {
  const steps = new SourceSteps();
  const sha256 = readSourceLines(file, (line, lineNo) => {
    const text = line.trim();
    if (text === '') return;
    const where = `${file}:${lineNo}`;
    const read = text.startsWith('{') ? readJsonLine(text, where, steps) : readConsoleLine(text, where, steps);
    if (!read) steps.skipped++;
  });
  return { ...steps.map(VERL_RULES), sha256, skippedLines: steps.skipped, algorithm: verlAlgorithm(steps.keys()) };
}

/** Imports a verl log (console output or the `file` backend's JSON Lines) into a new run directory. */
export function importVerl(log: string, outDir: string, options: ImportOptions = {}): ImportResult {
  return importRun('verl', log, outDir, options, parseVerl);
}
