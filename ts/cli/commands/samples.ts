import { Command, Option } from 'clipanion';
import * as t from 'typanion';

import { RlprobeError } from '../../errors.js';
import { RunReader } from '../../reader/run-reader.js';
import type { SampleQuery } from '../../reader/sample-stream.js';
import type { StoredSampleRecord } from '../../schema/sample-record.js';
import { ProbeCommand } from '../base-command.js';

const WHY: Record<string, string> = {
  top_k: 'top reward of its batch',
  bottom_k: 'bottom reward of its batch',
  random: 'random draw from the middle',
  all: 'whole batch kept',
};

const isCount = t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(0));

function num(x: number | undefined, digits = 3, signed = false): string {
  if (x === undefined) return '—';
  if (Number.isNaN(x)) return 'NaN';
  const s = Number.isInteger(x) ? String(x) : x.toFixed(digits);
  return signed && x > 0 ? `+${s}` : s;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}… (${text.length} chars)` : flat;
}

/** `--reward 0.9..` / `..0` / `0.2..0.8` → inclusive bounds (either side may be open). */
export function parseRewardRange(s: string): { rewardMin?: number; rewardMax?: number } {
  const m = /^\s*([-+0-9.eE]*)\s*\.\.\s*([-+0-9.eE]*)\s*$/.exec(s);
  const bound = (x: string | undefined) => (x === undefined || x === '' ? undefined : Number(x));
  const lo = bound(m?.[1]);
  const hi = bound(m?.[2]);
  if (!m || (lo === undefined && hi === undefined) || Number.isNaN(lo) || Number.isNaN(hi)) {
    throw new RlprobeError('RLPROBE_INVALID_QUERY', `invalid --reward ${JSON.stringify(s)}: expected MIN..MAX, MIN.. or ..MAX, e.g. 0.9..`);
  }
  return { rewardMin: lo, rewardMax: hi };
}

/** `--steps 100..200` → [100, 200]. */
export function parseStepRange(s: string): [number, number] {
  const m = /^\s*(\d+)\s*(?:\.\.|-|:)\s*(\d+)\s*$/.exec(s);
  if (!m) throw new RlprobeError('RLPROBE_INVALID_QUERY', `invalid --steps ${JSON.stringify(s)}: expected FROM..TO, e.g. 100..200`);
  return [Number(m[1]), Number(m[2])];
}

export class SamplesCommand extends ProbeCommand {
  static paths = [['samples']];
  static usage = Command.Usage({
    description: 'List recorded samples and why each was kept (streams; filters run before loading)',
    details:
      'Samples of every rank, filtered by step, step range, capture reason, group, rank, reward range, ' +
      'truncation, text (case-insensitive, prompt or completion) and the steps of a doctor finding. ' +
      'Text output shows reward, components, advantage, length and the start of prompt and completion; ' +
      '`--json` prints one JSON object per line.',
    examples: [
      ['The samples of one step', '$0 samples runs/exp1 --step 212'],
      ['Top-reward samples of a step range', '$0 samples runs/exp1 --steps 200..300 --reason top_k'],
      ['One GRPO group on rank 1, in full', '$0 samples runs/exp1 --group 17 --rank 1 --full'],
      ['Everything, for jq', '$0 samples runs/exp1 --limit 0 --json'],
      ['High-reward truncated completions that mention "step"', '$0 samples runs/exp1 --reward 0.9.. --truncated --text step'],
      ['The samples behind a doctor finding', '$0 samples runs/exp1 --around-finding TRUNCATION_COLLAPSE'],
    ],
  });

  run = Option.String({ name: 'run' });
  step = Option.String('--step', { description: 'Only this step', validator: isCount });
  steps = Option.String('--steps', { description: 'Only steps FROM..TO (inclusive)' });
  reasons = Option.Array('--reason', [], { description: 'Only this capture reason: top_k, bottom_k, random, all (repeatable)' });
  group = Option.String('--group', { description: 'Only this group id' });
  ranks = Option.Array('--rank', [], { description: 'Only this rank (repeatable)' });
  limit = Option.String('--limit', '50', { description: 'Print at most N samples (0: all)', validator: isCount });
  reward = Option.String('--reward', { description: 'Only rewards in MIN..MAX (either side may be open: 0.9.. or ..0)' });
  truncated = Option.Boolean('--truncated', { description: 'Only truncated completions (--no-truncated: only terminated ones)' });
  text = Option.String('--text', { description: 'Only samples whose prompt or completion contains this (case-insensitive)' });
  aroundFinding = Option.String('--around-finding', { description: 'Only the steps of this doctor finding (e.g. ENTROPY_COLLAPSE), from onset to last step' });
  full = Option.Boolean('--full', false, { description: 'Print prompt and completion in full' });
  json = Option.Boolean('--json', false, { description: 'One JSON object per line instead of text' });

  async exec(): Promise<number> {
    const reader = RunReader.open(this.run);
    const query: SampleQuery = {};
    if (this.step !== undefined) query.step = this.step;
    if (this.steps !== undefined) query.stepRange = parseStepRange(this.steps);
    if (this.reasons.length) query.reason = this.reasons;
    if (this.group !== undefined) query.group = this.group;
    if (this.reward !== undefined) Object.assign(query, parseRewardRange(this.reward));
    if (this.truncated !== undefined) query.truncated = this.truncated;
    if (this.text !== undefined) query.text = this.text;
    if (this.aroundFinding !== undefined) query.aroundFinding = this.aroundFinding;
    if (this.ranks.length) {
      query.rank = this.ranks.map((r) => {
        if (!/^\d+$/.test(r)) throw new RlprobeError('RLPROBE_INVALID_QUERY', `invalid --rank ${JSON.stringify(r)}: expected a non-negative integer`);
        return Number(r);
      });
    }
    const out = this.context.stdout;
    let printed = 0;
    for (const s of reader.samples(query)) {
      if (this.limit > 0 && printed === this.limit) {
        if (!this.json) out.write(`… stopped at ${this.limit} samples (--limit 0 prints all)\n`);
        break;
      }
      out.write(this.json ? sampleJsonLine(s) : formatSample(s, this.full));
      printed++;
    }
    if (printed === 0 && !this.json) out.write('no samples match\n');
    return 0;
  }
}

/** One sample as a JSON line (NaN and ±Infinity as strings, which JSON lacks). */
export function sampleJsonLine(s: StoredSampleRecord): string {
  return `${JSON.stringify(s, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v))}\n`;
}

/** One sample for a person: why it was kept, its numbers, then prompt and completion (`full`: whole). */
export function formatSample(s: StoredSampleRecord, full: boolean): string {
  const reason = s.capture_reason ?? '—';
  const why = WHY[reason] ? ` (${WHY[reason]})` : '';
  const len = s.completion_len === undefined ? '' : `  len ${s.completion_len}${s.truncated ? ' TRUNCATED' : ''}`;
  const group = s.group_id === undefined ? '' : `  group ${s.group_id}`;
  const lines = [
    `step ${s.step}  ${reason}${why}  reward ${num(s.reward_total)}  adv ${num(s.advantage, 3, true)}${len}${group}  rank ${s.rank}  id ${s.sample_id}`,
  ];
  if (s.reward_components) {
    lines.push(`  components  ${Object.entries(s.reward_components).map(([k, v]) => `${k}=${num(v)}`).join('  ')}`);
  }
  const extras: string[] = [];
  if (s.logprob_mean !== undefined) extras.push(`logprob_mean=${num(s.logprob_mean)}`);
  if (s.kl_contribution !== undefined) extras.push(`kl=${num(s.kl_contribution, 4)}`);
  for (const [k, v] of Object.entries(s.extra ?? {})) extras.push(`${k}=${num(v)}`);
  if (extras.length) lines.push(`  metrics     ${extras.join('  ')}`);
  if (s.span_id !== undefined || s.labels !== undefined) {
    const labels = Object.entries(s.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
    lines.push(`  span        ${s.span_id ?? '—'}${labels ? `  labels ${labels}` : ''}`);
  }
  const show = (label: string, text: string | undefined) => {
    if (text === undefined) return;
    if (full) lines.push(`  ${label}:`, ...text.split('\n').map((l) => `    ${l}`));
    else lines.push(`  ${label.padEnd(10)}  ${oneLine(text, 160)}`);
  };
  show('prompt', s.prompt_text);
  show('completion', s.completion_text);
  if (s.completion_text === undefined && s.completion_token_ids) {
    lines.push(`  tokens      ${s.completion_token_ids.length} ids: ${s.completion_token_ids.slice(0, 16).join(' ')}${s.completion_token_ids.length > 16 ? ' …' : ''}`);
  }
  return `${lines.join('\n')}\n\n`;
}
