/**
 * What a Harbor trial says about itself, read from its files: `result.json` (written once,
 * at the very end), `config.json`, the verifier's reward files and `exception.txt`. Read
 * leniently: Python writes NaN as a bare token, fields come and go between Harbor versions,
 * and an unfinished trial has no result at all.
 */
import { isPlainObject } from '../import/python-json.js';
import type { TrialFileReader } from './file-reader.js';
import { parseTimestamp } from './trajectory/times.js';

export interface TrialException {
  type: string | null;
  message: string | null;
  traceback: string | null;
  occurred_at: string | null;
  /** The first 8 KB of `exception.txt`, when the trial wrote one. */
  text: string | null;
}

export interface StepOutcome {
  name: string;
  exception: TrialException | null;
  rewards: Record<string, number | null> | null;
  timings: Record<string, PhaseTiming>;
}

export interface PhaseTiming {
  started_at: string | null;
  finished_at: string | null;
  seconds: number | null;
}

export interface TrialInfo {
  /** `result.json` `id`: a retry that reuses the directory name keeps it. */
  id: string | null;
  name: string;
  task_name: string | null;
  task_id: unknown;
  trial_uri: string | null;
  agent: string | null;
  agent_version: string | null;
  model: string | null;
  model_provider: string | null;
  /** Named rewards, NaN kept as null. */
  rewards: Record<string, number | null> | null;
  reward_source: 'verifier_result.rewards' | 'verifier/reward.json' | 'verifier/reward.txt' | null;
  exception: TrialException | null;
  started_at: string | null;
  finished_at: string | null;
  /** Harbor's phases (`environment_setup`, `agent_setup`, `agent_execution`, `verifier`) and any other `{started_at, finished_at}` member of the result. */
  timings: Record<string, PhaseTiming>;
  tokens: { input: number | null; cached: number | null; output: number | null; cost_usd: number | null } | null;
  /** Multi-step trials: the step names, in the order they ran (`result.json` `step_results`), then any other `steps/<name>/` by name. */
  steps: string[];
  /** Multi-step trials: each step's own outcome from `result.json` `step_results` (Harbor records a step's failure there, not in the trial's `exception_info`). */
  step_results: StepOutcome[];
  /** Whether `result.json` was there: a trial without it had not finished. */
  finished: boolean;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const num = (v: unknown): number | null => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
};
const obj = (v: unknown): Record<string, unknown> => (isPlainObject(v) ? v : {});

/**
 * `Type: message` from the text of `exception.txt`: a Python traceback names the exception
 * on its last line (`ValueError: bad input`), not its first (`Traceback (most recent…`).
 */
export function raisedBy(text: string | null): { type: string; message: string } | null {
  if (text === null) return null;
  const lines = text.replace(/…$/, '').split('\n').map((l) => l.trimEnd()).filter((l) => l.trim() !== '');
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^([A-Za-z_][\w.]*): ?(.*)$/.exec(lines[i]);
    if (m && !lines[i].startsWith(' ')) return { type: m[1], message: m[2] };
  }
  const first = lines[0];
  return first === undefined ? null : { type: 'Exception', message: first };
}

/** Unix seconds of a result time, read as trajectory times are (a naive one as UTC), or null. */
export function unixSeconds(t: string | null): number | null {
  return t === null ? null : parseTimestamp(t).t;
}

/** Seconds between two result times, or null. */
export function secondsBetween(a: string | null, b: string | null): number | null {
  const x = unixSeconds(a);
  const y = unixSeconds(b);
  return x === null || y === null ? null : y - x;
}

function rewardsOf(v: unknown): Record<string, number | null> | null {
  if (!isPlainObject(v)) return null;
  const out: Record<string, number | null> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'number' || typeof x === 'string' || x === null) out[k] = num(x);
  return Object.keys(out).length > 0 ? out : null;
}

/** Rewards: `verifier_result.rewards`, else `verifier/reward.json`, else `verifier/reward.txt`. */
function readRewards(files: TrialFileReader, result: Record<string, unknown> | null, prefix = ''): Pick<TrialInfo, 'rewards' | 'reward_source'> {
  const fromResult = rewardsOf(obj(result?.verifier_result).rewards);
  if (fromResult) return { rewards: fromResult, reward_source: 'verifier_result.rewards' };
  const json = files.jsonObject(`${prefix}verifier/reward.json`);
  const fromJson = rewardsOf(json);
  if (fromJson) return { rewards: fromJson, reward_source: 'verifier/reward.json' };
  const text = files.text(`${prefix}verifier/reward.txt`, 1024);
  if (text !== null && text.trim() !== '') {
    const v = text.trim();
    return { rewards: { reward: /^nan$/i.test(v) ? null : num(v) }, reward_source: 'verifier/reward.txt' };
  }
  return { rewards: null, reward_source: null };
}

function timingsOf(result: Record<string, unknown>): Record<string, PhaseTiming> {
  const out: Record<string, PhaseTiming> = {};
  for (const [k, v] of Object.entries(result)) {
    if (!isPlainObject(v) || !('started_at' in v || 'finished_at' in v)) continue;
    const started_at = str(v.started_at);
    const finished_at = str(v.finished_at);
    out[k] = { started_at, finished_at, seconds: secondsBetween(started_at, finished_at) };
  }
  return out;
}

function exceptionOf(info: unknown): TrialException | null {
  if (!isPlainObject(info)) return null;
  return { type: str(info.exception_type), message: str(info.exception_message), traceback: str(info.exception_traceback), occurred_at: str(info.occurred_at), text: null };
}

/** `step_results` of a multi-step trial's result: each step's name, exception, rewards and timings. */
function stepOutcomes(result: Record<string, unknown>): StepOutcome[] {
  if (!Array.isArray(result.step_results)) return [];
  const out: StepOutcome[] = [];
  for (const item of result.step_results) {
    if (!isPlainObject(item)) continue;
    const name = str(item.step_name) ?? str(item.name);
    // a name becomes a directory name (steps/<name>/): one plain segment only
    if (name === null || name === '.' || name === '..' || /[/\\\u0000]/.test(name)) continue;
    out.push({ name, exception: exceptionOf(item.exception_info), rewards: rewardsOf(obj(item.verifier_result).rewards), timings: timingsOf(item) });
  }
  return out;
}

/** Rewards of one multi-step trial step (`steps/<name>/verifier/…`). */
export function stepRewards(files: TrialFileReader, step: string): Pick<TrialInfo, 'rewards' | 'reward_source'> {
  return readRewards(files, null, `steps/${step}/`);
}

/** The trial's own account of itself; `dirName` names it when nothing else does. */
export function readTrialInfo(files: TrialFileReader, dirName: string, stepDirs: string[]): TrialInfo {
  const result = files.jsonObject('result.json') ?? files.jsonObject('results.json');
  const step_results = result ? stepOutcomes(result) : [];
  const ran = step_results.map((o) => o.name);
  const stepNames = [...new Set([...ran, ...[...stepDirs].sort()])];
  const config = files.jsonObject('config.json');
  const r = result ?? {};
  const agentInfo = obj(r.agent_info);
  const modelInfo = obj(agentInfo.model_info);
  const configAgent = obj(config?.agent);
  const exceptionInfo = isPlainObject(r.exception_info) ? r.exception_info : null;
  // the exception is named on the traceback's last line: read it whole (bounded), keep 8 KB
  const exceptionFull = files.text('exception.txt', 1 << 20);
  const exceptionText = exceptionFull !== null && exceptionFull.length > 8192 ? `${exceptionFull.slice(0, 8192)}…` : exceptionFull;
  const raised = raisedBy(exceptionFull);
  const agentResult = obj(r.agent_result);
  const tokens =
    result && isPlainObject(r.agent_result)
      ? { input: num(agentResult.n_input_tokens), cached: num(agentResult.n_cache_tokens), output: num(agentResult.n_output_tokens), cost_usd: num(agentResult.cost_usd) }
      : null;
  const started_at = str(r.started_at);
  const finished_at = str(r.finished_at);
  return {
    id: str(r.id),
    name: str(r.trial_name) ?? str(config?.trial_name) ?? dirName,
    task_name: str(r.task_name) ?? str(obj(config?.task).name),
    task_id: r.task_id ?? null,
    trial_uri: str(r.trial_uri),
    agent: str(agentInfo.name) ?? str(configAgent.name),
    agent_version: str(agentInfo.version),
    model: str(modelInfo.name) ?? str(configAgent.model_name),
    model_provider: str(modelInfo.provider),
    ...readRewards(files, result),
    exception:
      exceptionInfo || exceptionText !== null
        ? {
            type: str(exceptionInfo?.exception_type) ?? raised?.type ?? null,
            message: str(exceptionInfo?.exception_message) ?? raised?.message ?? null,
            traceback: str(exceptionInfo?.exception_traceback),
            occurred_at: str(exceptionInfo?.occurred_at),
            text: exceptionText,
          }
        : null,
    started_at,
    finished_at,
    timings: result ? timingsOf(r) : {},
    tokens,
    steps: stepNames,
    step_results,
    finished: result !== null,
  };
}
