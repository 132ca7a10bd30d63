/**
 * The report's sample forensics: which steps to show samples of, the samples kept at
 * those steps (top, bottom, random…), and the evidence samples the doctor named. Every
 * read goes through the reader's step filter, so a 1,000,000-sample run is never scanned.
 */
import type { Finding } from '../doctor/finding.js';
import type { RunReader } from '../reader/run-reader.js';
import { spanForest } from '../reader/span-reader.js';
import type { SpanTreeNode } from '../schema/span-record.js';
import type { StoredSampleRecord } from '../schema/sample-record.js';

export interface ChosenStep {
  step: number;
  /** Why this step is shown (several reasons can pick the same step). */
  why: string[];
}

export interface StepSamples extends ChosenStep {
  /** Samples shown, grouped by capture reason in the order top, bottom, random, others. */
  samples: StoredSampleRecord[];
  /** Samples stored at the step, per capture reason (more than are shown). */
  stored: Record<string, number>;
}

/** Findings whose onsets get their own forensics step. */
const FINDING_STEPS = 4;

/** The first of the ascending `xs` at or after `x`, or null. */
function firstAtOrAfter(xs: number[], x: number): number | null {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < xs.length ? xs[lo] : null;
}

/**
 * Steps to show samples of: those asked for, else the first sampled step at or after the
 * onset of each of the most severe findings and the first and last sampled steps (the
 * baseline and where the run is now). The findings' steps come first, most severe first (a
 * reader opens the report for them), then the others by step. `sampled`: the run's sampled
 * steps, ascending.
 */
export function chooseSteps(findings: Finding[], sampled: number[], asked?: number[]): ChosenStep[] {
  if (asked && asked.length > 0) return [...new Set(asked)].sort((a, b) => a - b).map((step) => ({ step, why: ['asked for'] }));
  if (sampled.length === 0) return [];
  const picked = new Map<number, { why: string[]; finding: number }>();
  const pick = (step: number | null, why: string, finding = Infinity) => {
    if (step === null) return;
    const p = picked.get(step);
    if (p) {
      p.why.push(why);
      p.finding = Math.min(p.finding, finding);
    } else picked.set(step, { why: [why], finding });
  };
  findings.slice(0, FINDING_STEPS).forEach((f, i) => pick(firstAtOrAfter(sampled, f.onset_step), `onset of ${f.code} (step ${f.onset_step})`, i));
  pick(sampled[0], 'first sampled step');
  pick(sampled[sampled.length - 1], 'last sampled step');
  return [...picked.entries()].sort((a, b) => a[1].finding - b[1].finding || a[0] - b[0]).map(([step, p]) => ({ step, why: p.why }));
}

/** Every sample stored at `steps`, by step, read in one pass over the files. */
export function samplesAt(reader: RunReader, steps: Iterable<number>): Map<number, StoredSampleRecord[]> {
  const wanted = [...new Set(steps)];
  const out = new Map<number, StoredSampleRecord[]>(wanted.map((s) => [s, []]));
  if (wanted.length === 0) return out;
  for (const s of reader.samples({ steps: wanted })) out.get(s.step)?.push(s);
  return out;
}

const REASON_ORDER = ['top_k', 'bottom_k', 'random'];

function byReward(desc: boolean) {
  return (a: StoredSampleRecord, b: StoredSampleRecord) => {
    const x = a.reward_total ?? NaN;
    const y = b.reward_total ?? NaN;
    if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : 1) : -1;
    return desc ? y - x : x - y;
  };
}

function rank(reason: string): number {
  const i = REASON_ORDER.indexOf(reason);
  return i < 0 ? REASON_ORDER.length : i;
}

/** The samples shown at each chosen step: at most `perReason` of each capture reason. */
export function stepSamples(steps: ChosenStep[], byStep: Map<number, StoredSampleRecord[]>, perReason: number): StepSamples[] {
  return steps.map(({ step, why }) => {
    const groups = new Map<string, StoredSampleRecord[]>();
    for (const s of byStep.get(step) ?? []) {
      const reason = s.capture_reason ?? 'unknown';
      const g = groups.get(reason);
      if (g) g.push(s);
      else groups.set(reason, [s]);
    }
    const reasons = [...groups.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
    const samples: StoredSampleRecord[] = [];
    // keyed by capture reasons, which any writer can set: no prototype to collide with
    const stored: Record<string, number> = Object.create(null) as Record<string, number>;
    for (const r of reasons) {
      const g = groups.get(r)!;
      stored[r] = g.length;
      // top_k highest first, bottom_k lowest first; random and the rest as stored (unbiased)
      const ordered = r === 'top_k' || r === 'bottom_k' ? [...g].sort(byReward(r === 'top_k')) : g;
      samples.push(...ordered.slice(0, perReason));
    }
    return { step, why, samples, stored };
  });
}

/** A sample's key in the report's evidence map. */
export function sampleKey(step: number, sampleId: string): string {
  return `${step}/${sampleId}`;
}

/** The steps holding the findings' evidence samples. */
export function evidenceSteps(findings: Finding[]): number[] {
  return [...new Set(findings.flatMap((f) => f.samples.map((s) => s.step)))];
}

/** The evidence samples the findings name, from samples read at their steps. */
export function evidenceSamples(findings: Finding[], byStep: Map<number, StoredSampleRecord[]>): Map<string, StoredSampleRecord> {
  const found = new Map<string, StoredSampleRecord>();
  for (const f of findings) {
    for (const e of f.samples) {
      const s = byStep.get(e.step)?.find((x) => x.sample_id === e.sample_id);
      if (s) found.set(sampleKey(e.step, e.sample_id), s);
    }
  }
  return found;
}

/**
 * The span trees of the shown samples (by root id) and each sample span's root: two reads,
 * the samples' spans then every span of their trees. Empty when the run has no spans.
 */
export function sampleSpanTrees(reader: RunReader, samples: Iterable<StoredSampleRecord>): SampleSpans {
  const ids = new Set<string>();
  for (const s of samples) if (s.span_id) ids.add(s.span_id);
  const out: SampleSpans = { rootOf: {}, trees: {} };
  if (ids.size === 0) return out;
  const own = reader.spans({ id: [...ids] });
  if (own.length === 0) return out;
  for (const s of own) out.rootOf[s.span_id] = s.root_id;
  const roots = [...new Set(own.map((s) => s.root_id))];
  for (const node of spanForest(reader.spans({ root: roots }))) {
    const root = node.span.root_id;
    if (out.trees[root] === undefined) out.trees[root] = node;
    else out.trees[root].children.push(node); // an orphan (its parent never written) under its root
  }
  return out;
}

export interface SampleSpans {
  /** A sample's span id → the root of its tree. */
  rootOf: Record<string, string>;
  /** Trees by root span id. */
  trees: Record<string, SpanTreeNode>;
}
