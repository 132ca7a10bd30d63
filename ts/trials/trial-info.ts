/**
 * What a Harbor trial says about itself, read from its files: `result.json` (written once,
 * at the very end), `config.json`, the verifier's reward files and `exception.txt`. Read
 * leniently: Python writes NaN as a bare token, fields come and go between Harbor versions,
 * and an unfinished trial has no result at all. Never silently: whatever is present but
 * cannot be used is named in `warnings` (fact-reader.ts).
 */
import { documentObject, FieldReader, Findings } from './fact-reader.js';
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
  /** Whether `result.json` was there (and readable): a trial without it had not finished. */
  finished: boolean;
  /** What could not be read from the trial's own files, and why (`result.json: id is a number (12), expected a string; ignored`). */
  warnings: string[];
}

type Obj = Record<string, unknown>;

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

type RewardSource = TrialInfo['reward_source'];

/** Rewards: `verifier_result.rewards`, else `verifier/reward.json`, else `verifier/reward.txt`. */
function readRewards(files: TrialFileReader, findings: Findings, fromResult: Record<string, number | null> | null, prefix = ''): { rewards: Record<string, number | null> | null; reward_source: RewardSource } {
  if (fromResult) return { rewards: fromResult, reward_source: 'verifier_result.rewards' };
  const jsonFile = `${prefix}verifier/reward.json`;
  const jsonFields = new FieldReader(jsonFile, findings);
  const doc = files.document(jsonFile);
  if (doc !== null && 'problem' in doc) documentObject(doc, jsonFields);
  const fromJson = doc !== null && 'value' in doc ? jsonFields.rewards(doc.value, '') : null;
  if (fromJson) return { rewards: fromJson, reward_source: 'verifier/reward.json' };
  const textFile = `${prefix}verifier/reward.txt`;
  const text = files.text(textFile, 1024);
  if (text !== null && text.trim() !== '') {
    const v = text.trim();
    // Python prints nan and inf for a reward it could not compute: kept as null, like NaN elsewhere
    if (/^[+-]?(nan|inf(inity)?)$/i.test(v)) return { rewards: { reward: null }, reward_source: 'verifier/reward.txt' };
    const n = Number(v);
    if (Number.isFinite(n)) return { rewards: { reward: n }, reward_source: 'verifier/reward.txt' };
    new FieldReader(textFile, findings).note(`${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)} is not a number; no reward read from it`);
    return { rewards: { reward: null }, reward_source: 'verifier/reward.txt' };
  }
  return { rewards: null, reward_source: null };
}

/** Every member of `o` shaped `{started_at, finished_at}`: Harbor's phases. */
function timingsOf(fields: FieldReader, o: Obj, at = ''): Record<string, PhaseTiming> {
  const out: Record<string, PhaseTiming> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !('started_at' in v || 'finished_at' in v)) continue;
    const phase = v as Obj;
    const started_at = fields.time(phase, 'started_at', `${at}${k}.started_at`);
    const finished_at = fields.time(phase, 'finished_at', `${at}${k}.finished_at`);
    out[k] = { started_at, finished_at, seconds: secondsBetween(started_at, finished_at) };
  }
  return out;
}

/** An `exception_info` object (Harbor's), or a bare string taken as its message (noted). */
function exceptionOf(fields: FieldReader, o: Obj, key: string, at = key): TrialException | null {
  const v = o[key];
  if (typeof v === 'string' && v.trim() !== '') {
    fields.note(`${at} is a string, expected an object; kept as the exception message`);
    return { type: null, message: v, traceback: null, occurred_at: null, text: null };
  }
  const info = fields.object(o, key, at);
  if (info === null) return null;
  return {
    type: fields.string(info, 'exception_type', `${at}.exception_type`),
    message: fields.string(info, 'exception_message', `${at}.exception_message`),
    traceback: fields.string(info, 'exception_traceback', `${at}.exception_traceback`),
    occurred_at: fields.string(info, 'occurred_at', `${at}.occurred_at`),
    text: null,
  };
}

/** `step_results` of a multi-step trial's result: each step's name, exception, rewards and timings. */
function stepOutcomes(fields: FieldReader, result: Obj): StepOutcome[] {
  const list = fields.list(result, 'step_results');
  if (list === null) return [];
  const out: StepOutcome[] = [];
  list.forEach((item, i) => {
    const at = `step_results[${i}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      fields.note(`${at} is not an object; skipped`);
      return;
    }
    const o = item as Obj;
    const name = fields.string(o, 'step_name', `${at}.step_name`) ?? fields.string(o, 'name', `${at}.name`);
    // a name becomes a directory name (steps/<name>/): one plain segment only
    // oxlint-disable-next-line no-control-regex -- NUL is exactly what a path segment must not hold
    if (name === null || name === '.' || name === '..' || /[/\\\u0000]/.test(name)) {
      fields.note(`${at} has no usable step_name (${name === null ? 'none' : JSON.stringify(name)}: not one directory name); skipped`);
      return;
    }
    const verifier = fields.object(o, 'verifier_result', `${at}.verifier_result`);
    const rewards = verifier === null ? null : fields.rewards(verifier.rewards, `${at}.verifier_result.rewards`);
    out.push({ name, exception: exceptionOf(fields, o, 'exception_info', `${at}.exception_info`), rewards, timings: timingsOf(fields, o, `${at}.`) });
  });
  return out;
}

/** Rewards of one multi-step trial step (`steps/<name>/verifier/…`). */
export function stepRewards(files: TrialFileReader, step: string, findings = new Findings()): { rewards: Record<string, number | null> | null; reward_source: RewardSource } {
  return readRewards(files, findings, null, `steps/${step}/`);
}

/** The trial's own account of itself; `dirName` names it when nothing else does. `findings` may hold earlier warnings (the inventory's). */
export function readTrialInfo(files: TrialFileReader, dirName: string, stepDirs: string[], findings = new Findings()): TrialInfo {
  const resultFile = files.has('result.json') || !files.has('results.json') ? 'result.json' : 'results.json';
  const fields = new FieldReader(resultFile, findings);
  const result = documentObject(files.document(resultFile), fields);
  const configFields = new FieldReader('config.json', findings);
  const config = documentObject(files.document('config.json'), configFields) ?? {};
  const r = result ?? {};
  const step_results = stepOutcomes(fields, r);
  const ran = step_results.map((o) => o.name);
  const stepNames = [...new Set([...ran, ...[...stepDirs].sort()])];
  // each step's reward files, read here for what they cannot tell (the spans read them again)
  for (const step of stepNames) if (!ran.includes(step)) stepRewards(files, step, findings);
  const agentInfo = fields.object(r, 'agent_info') ?? {};
  const modelInfo = fields.object(agentInfo, 'model_info', 'agent_info.model_info') ?? {};
  const configAgent = configFields.object(config, 'agent') ?? {};
  const configTask = configFields.object(config, 'task') ?? {};
  const exceptionInfo = exceptionOf(fields, r, 'exception_info');
  // the exception is named on the traceback's last line: read it whole (bounded), keep 8 KB
  const exceptionFull = files.text('exception.txt', 1 << 20);
  const exceptionText = exceptionFull !== null && exceptionFull.length > 8192 ? `${exceptionFull.slice(0, 8192)}…` : exceptionFull;
  const raised = raisedBy(exceptionFull);
  const agentResult = fields.object(r, 'agent_result');
  const tokens =
    agentResult !== null
      ? {
          input: fields.number(agentResult, 'n_input_tokens', 'agent_result.n_input_tokens'),
          cached: fields.number(agentResult, 'n_cache_tokens', 'agent_result.n_cache_tokens'),
          output: fields.number(agentResult, 'n_output_tokens', 'agent_result.n_output_tokens'),
          cost_usd: fields.number(agentResult, 'cost_usd', 'agent_result.cost_usd'),
        }
      : null;
  const verifier = fields.object(r, 'verifier_result');
  const resultRewards = verifier === null ? null : fields.rewards(verifier.rewards, 'verifier_result.rewards');
  const info: Omit<TrialInfo, 'warnings'> = {
    id: fields.string(r, 'id'),
    name: fields.string(r, 'trial_name') ?? configFields.string(config, 'trial_name') ?? dirName,
    task_name: fields.string(r, 'task_name') ?? configFields.string(configTask, 'name', 'task.name'),
    task_id: r.task_id ?? null,
    trial_uri: fields.string(r, 'trial_uri'),
    agent: fields.string(agentInfo, 'name', 'agent_info.name') ?? configFields.string(configAgent, 'name', 'agent.name'),
    agent_version: fields.string(agentInfo, 'version', 'agent_info.version'),
    model: fields.string(modelInfo, 'name', 'agent_info.model_info.name') ?? configFields.string(configAgent, 'model_name', 'agent.model_name'),
    model_provider: fields.string(modelInfo, 'provider', 'agent_info.model_info.provider'),
    ...readRewards(files, findings, resultRewards),
    exception:
      exceptionInfo || exceptionText !== null
        ? {
            type: exceptionInfo?.type ?? raised?.type ?? null,
            message: exceptionInfo?.message ?? raised?.message ?? null,
            traceback: exceptionInfo?.traceback ?? null,
            occurred_at: exceptionInfo?.occurred_at ?? null,
            text: exceptionText,
          }
        : null,
    started_at: fields.time(r, 'started_at'),
    finished_at: fields.time(r, 'finished_at'),
    timings: timingsOf(fields, r),
    tokens,
    steps: stepNames,
    step_results,
    finished: result !== null,
  };
  return { ...info, warnings: findings.list() };
}
