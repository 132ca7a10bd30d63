/** One sample as `probe samples` and `probe sample` print it: a JSON line, or text for a person. */
import type { StoredSampleRecord } from '../../schema/sample-record.js';
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
