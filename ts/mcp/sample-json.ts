/**
 * A sample as the samples and sample tools give it: numbers JSON-safe, and (for lists) the
 * prompt and completion cut at a stated length with a marker, their full lengths beside.
 */
import { z } from 'zod';

import type { StoredSampleRecord } from '../schema/sample-record.js';
import { longestFitting } from './budget.js';
import { cutText, jsonNumber } from './clip.js';
import { itemBytes } from './paging.js';
import { JsonNumberSchema } from './schemas.js';
import { block, line, num } from './text.js';

/** Token ids shown of a completion in a list (the sample tool pages them all). */
export const LISTED_TOKEN_IDS = 32;

const numbers = z.record(z.string(), JsonNumberSchema);

/** What a sample carries besides its texts. */
export const SampleFieldsSchema = z.object({
  step: z.number(),
  sample_id: z.string(),
  rank: z.number().int(),
  group_id: z.string().optional(),
  prompt_id: z.string().optional(),
  capture_reason: z.string().optional().describe('Why it was kept: top_k, bottom_k, random, all, or the trainer\'s own'),
  reward_total: JsonNumberSchema.optional(),
  reward_components: numbers.optional(),
  advantage: JsonNumberSchema.optional(),
  logprob_mean: JsonNumberSchema.optional(),
  kl_contribution: JsonNumberSchema.optional(),
  completion_len: JsonNumberSchema.optional(),
  truncated: z.boolean().optional(),
  extra: numbers.optional(),
  span_id: z.string().optional().describe('The span it was logged under: span_tree shows its rollout'),
  labels: z.record(z.string(), z.string()).optional(),
  prompt_chars: z.number().int().optional().describe('Full length of the prompt'),
  completion_chars: z.number().int().optional().describe('Full length of the completion'),
  completion_tokens: z.number().int().optional().describe('Completion token ids recorded'),
});
export type SampleFields = z.infer<typeof SampleFieldsSchema>;

export const ListedSampleSchema = SampleFieldsSchema.extend({
  prompt_text: z.string().optional().describe('Cut at text_chars, with a marker when cut'),
  completion_text: z.string().optional().describe('Cut at text_chars, with a marker when cut'),
  completion_token_ids: z.array(z.number()).optional().describe(`The first ${LISTED_TOKEN_IDS} ids`),
});
export type ListedSample = z.infer<typeof ListedSampleSchema>;

const numbersOf = (r: Record<string, number> | undefined) => (r === undefined ? undefined : Object.fromEntries(Object.entries(r).map(([k, v]) => [k, jsonNumber(v)])));
const numberOf = (x: number | undefined) => (x === undefined ? undefined : jsonNumber(x));

/** The sample's fields, texts and token ids left out (their lengths kept). */
export function sampleFields(s: StoredSampleRecord): SampleFields {
  const out: SampleFields = {
    step: s.step,
    sample_id: s.sample_id,
    rank: s.rank,
    group_id: s.group_id,
    prompt_id: s.prompt_id,
    capture_reason: s.capture_reason,
    reward_total: numberOf(s.reward_total),
    reward_components: numbersOf(s.reward_components),
    advantage: numberOf(s.advantage),
    logprob_mean: numberOf(s.logprob_mean),
    kl_contribution: numberOf(s.kl_contribution),
    completion_len: numberOf(s.completion_len),
    truncated: s.truncated,
    extra: numbersOf(s.extra),
    span_id: s.span_id,
    labels: s.labels,
    prompt_chars: s.prompt_text?.length,
    completion_chars: s.completion_text?.length,
    completion_tokens: s.completion_token_ids?.length,
  };
  // absent fields are left out, not sent as undefined
  for (const k of Object.keys(out) as (keyof SampleFields)[]) if (out[k] === undefined) delete out[k];
  return out;
}

export function listedSample(s: StoredSampleRecord, textChars: number): ListedSample {
  const out: ListedSample = sampleFields(s);
  if (s.prompt_text !== undefined) out.prompt_text = cutText(s.prompt_text, textChars);
  if (s.completion_text !== undefined) out.completion_text = cutText(s.completion_text, textChars);
  if (s.completion_token_ids !== undefined) out.completion_token_ids = s.completion_token_ids.slice(0, LISTED_TOKEN_IDS);
  return out;
}

/**
 * `listedSample` with its texts cut shorter than `textChars` where needed for its JSON and
 * text to take at most `maxBytes` (the longest cut that fits; each cut marked). Null when
 * not even empty texts fit.
 */
export function listedSampleWithin(s: StoredSampleRecord, textChars: number, maxBytes: number): { json: ListedSample; text: string } | null {
  const render = (chars: number) => {
    const json = listedSample(s, chars);
    return { json, text: listedSampleText(json) };
  };
  return longestFitting(textChars, maxBytes, render, (x) => itemBytes(x.json, x.text));
}

/** The header line of a sample: why it was kept, its numbers, its ids. */
export function sampleHead(s: SampleFields): string {
  const len = s.completion_len === undefined ? '' : `  len ${num(s.completion_len)}${s.truncated ? ' TRUNCATED' : ''}`;
  const parts = [
    `step ${s.step}  ${s.capture_reason ?? '—'}  reward ${num(s.reward_total)}  adv ${num(s.advantage)}${len}`,
    s.group_id === undefined ? '' : `  group ${s.group_id}`,
    `  rank ${s.rank}  id ${s.sample_id}`,
    s.span_id === undefined ? '' : `  span ${s.span_id}`,
  ];
  const lines = [line(parts.join(''))];
  if (s.reward_components) lines.push(line(`  components ${Object.entries(s.reward_components).map(([k, v]) => `${k}=${num(v)}`).join(' ')}`));
  const extra = Object.entries(s.extra ?? {}).map(([k, v]) => `${k}=${num(v)}`);
  if (s.logprob_mean !== undefined) extra.unshift(`logprob_mean=${num(s.logprob_mean)}`);
  if (s.kl_contribution !== undefined) extra.unshift(`kl=${num(s.kl_contribution)}`);
  if (extra.length) lines.push(line(`  metrics ${extra.join(' ')}`));
  if (s.labels && Object.keys(s.labels).length) lines.push(line(`  labels ${Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(' ')}`));
  return lines.join('\n');
}

/** A text over several lines, indented, control characters escaped (newlines and tabs kept). */
export function indented(label: string, text: string): string {
  return `  ${label}:\n${block(text).split('\n').map((l) => `    ${l}`).join('\n')}`;
}

export function listedSampleText(s: ListedSample): string {
  const lines = [sampleHead(s)];
  if (s.prompt_text !== undefined) lines.push(indented('prompt', s.prompt_text));
  if (s.completion_text !== undefined) lines.push(indented('completion', s.completion_text));
  if (s.completion_text === undefined && s.completion_token_ids) lines.push(`  tokens ${s.completion_tokens} ids: ${s.completion_token_ids.join(' ')}${(s.completion_tokens ?? 0) > s.completion_token_ids.length ? ' …' : ''}`);
  return lines.join('\n');
}
