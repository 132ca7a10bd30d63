import { Command, Option, UsageError } from 'clipanion';

import { diagnose } from '../../doctor/diagnose.js';
import { findingByCode } from '../../doctor/finding-by-code.js';
import { RunReader } from '../../reader/run-reader.js';
import type { SampleQuery } from '../../reader/sample-stream.js';
import { CAPTURE_REASONS } from '../../schema/sample-record.js';
import type { StoredSampleRecord } from '../../schema/sample-record.js';
import { ProbeCommand } from '../base-command.js';
import { listOption, valueOption } from '../named-options.js';
import { areCounts, isCount, isRewardRange, isStepRange, orList } from '../option-values.js';
import { terminalLine, terminalText } from '../terminal-text.js';

const WHY: Record<string, string> = {
  top_k: 'top reward of its batch',
  bottom_k: 'bottom reward of its batch',
  random: 'random draw from the middle',
  all: 'whole batch kept',
};

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

/**
 * Refuses a --reason that no sample can have: the standard reasons always pass; one of the
 * caller's own (`logSamples` with `select: false` keeps it) only when the run has it.
 */
function checkReasons(reader: RunReader, reasons: readonly string[]): void {
  const own = [...new Set(reasons.filter((r) => !(CAPTURE_REASONS as readonly string[]).includes(r)))];
  if (own.length === 0) return;
  const found = new Set<string>();
  for (const s of reader.samples({ reason: own, columns: ['capture_reason'] })) {
    found.add(s.capture_reason ?? '');
    if (found.size === own.length) return;
  }
  const unknown = own.find((r) => !found.has(r));
  if (unknown === undefined) return;
  // the error path only: every reason the run has, to list them
  const inRun = new Set<string>();
  for (const s of reader.samples({ columns: ['capture_reason'] })) if (s.capture_reason) inRun.add(s.capture_reason);
  const valid = [...CAPTURE_REASONS, ...[...inRun].filter((r) => !(CAPTURE_REASONS as readonly string[]).includes(r)).sort()];
  throw new UsageError(`invalid --reason ${JSON.stringify(unknown)}: expected ${orList(valid)}`);
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
  step = valueOption('--step', { value: 'N', description: 'Only this step', validator: isCount });
  steps = valueOption('--steps', { value: 'FROM..TO', description: 'Only steps FROM..TO (inclusive)', validator: isStepRange });
  reasons = listOption('--reason', {
    value: 'REASON',
    description: `Only this capture reason: ${CAPTURE_REASONS.join(', ')}, or one of the run's own`,
  });
  group = valueOption('--group', { value: 'ID', description: 'Only this group id' });
  ranks = listOption('--rank', { value: 'N', description: 'Only this rank', validator: areCounts });
  limit = valueOption('--limit', { value: 'N', description: 'Print at most N samples (0: all)', default: '50', validator: isCount });
  reward = valueOption('--reward', { value: 'MIN..MAX', description: 'Only rewards in MIN..MAX (either side may be open: 0.9.. or ..0)', validator: isRewardRange });
  truncated = Option.Boolean('--truncated', { description: 'Only truncated completions (--no-truncated: only terminated ones)' });
  text = valueOption('--text', { value: 'TEXT', description: 'Only samples whose prompt or completion contains this (case-insensitive)' });
  aroundFinding = valueOption('--around-finding', { value: 'CODE', description: 'Only the steps of this doctor finding (e.g. ENTROPY_COLLAPSE), from onset to last step' });
  full = Option.Boolean('--full', false, { description: 'Print prompt and completion in full' });
  json = Option.Boolean('--json', false, { description: 'One JSON object per line instead of text' });

  async exec(): Promise<number> {
    const reader = RunReader.open(this.run);
    const query: SampleQuery = {};
    if (this.step !== undefined) query.step = this.step;
    if (this.steps !== undefined) query.stepRange = this.steps;
    if (this.reasons.length) {
      checkReasons(reader, this.reasons);
      query.reason = this.reasons;
    }
    if (this.group !== undefined) query.group = this.group;
    if (this.reward !== undefined) Object.assign(query, this.reward);
    if (this.truncated !== undefined) query.truncated = this.truncated;
    if (this.text !== undefined) query.text = this.text;
    if (this.aroundFinding !== undefined) query.aroundFinding = findingByCode(diagnose(reader, { samples: false }), this.aroundFinding);
    if (this.ranks.length) query.rank = this.ranks;
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

/**
 * One sample for a person: why it was kept, its numbers, then prompt and completion
 * (`full`: whole, over several lines). Ids, keys and labels come from the trainer and
 * texts from the model: each line is escaped for the terminal.
 */
export function formatSample(s: StoredSampleRecord, full: boolean): string {
  const reason = s.capture_reason ?? '—';
  const why = WHY[reason] ? ` (${WHY[reason]})` : '';
  const len = s.completion_len === undefined ? '' : `  len ${s.completion_len}${s.truncated ? ' TRUNCATED' : ''}`;
  const group = s.group_id === undefined ? '' : `  group ${s.group_id}`;
  const lines = [
    terminalLine(`step ${s.step}  ${reason}${why}  reward ${num(s.reward_total)}  adv ${num(s.advantage, 3, true)}${len}${group}  rank ${s.rank}  id ${s.sample_id}`),
  ];
  if (s.reward_components) {
    lines.push(terminalLine(`  components  ${Object.entries(s.reward_components).map(([k, v]) => `${k}=${num(v)}`).join('  ')}`));
  }
  const extras: string[] = [];
  if (s.logprob_mean !== undefined) extras.push(`logprob_mean=${num(s.logprob_mean)}`);
  if (s.kl_contribution !== undefined) extras.push(`kl=${num(s.kl_contribution, 4)}`);
  for (const [k, v] of Object.entries(s.extra ?? {})) extras.push(`${k}=${num(v)}`);
  if (extras.length) lines.push(terminalLine(`  metrics     ${extras.join('  ')}`));
  if (s.span_id !== undefined || s.labels !== undefined) {
    const labels = Object.entries(s.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
    lines.push(terminalLine(`  span        ${s.span_id ?? '—'}${labels ? `  labels ${labels}` : ''}`));
  }
  const show = (label: string, text: string | undefined) => {
    if (text === undefined) return;
    if (full) lines.push(`  ${label}:`, ...text.split('\n').map((l) => `    ${terminalText(l)}`));
    else lines.push(`  ${label.padEnd(10)}  ${terminalLine(oneLine(text, 160))}`);
  };
  show('prompt', s.prompt_text);
  show('completion', s.completion_text);
  if (s.completion_text === undefined && s.completion_token_ids) {
    lines.push(`  tokens      ${s.completion_token_ids.length} ids: ${s.completion_token_ids.slice(0, 16).join(' ')}${s.completion_token_ids.length > 16 ? ' …' : ''}`);
  }
  return `${lines.join('\n')}\n\n`;
}
