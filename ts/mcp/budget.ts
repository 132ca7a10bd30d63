/**
 * The byte budget of one tool answer. An agent's context is small and shared: every answer
 * (its text and its structured content together) stays under the budget, and a longer one
 * is cut into pages the agent continues with a cursor (cursor.ts).
 */

/** About 8,000 tokens: room for an answer without crowding out the conversation. */
export const DEFAULT_BUDGET_BYTES = 32 * 1024;

/** Below this a page cannot hold even one span or one finding with its envelope. */
export const MIN_BUDGET_BYTES = 4 * 1024;

/** What a tool answers: text for the agent to read, the same facts as structured content. */
export interface ToolAnswer<S extends Record<string, unknown> = Record<string, unknown>> {
  text: string;
  structured: S;
}

/** The bytes an answer costs: its text plus its structured content as JSON, both UTF-8. */
export function answerBytes(answer: ToolAnswer): number {
  return Buffer.byteLength(answer.text, 'utf8') + Buffer.byteLength(JSON.stringify(answer.structured), 'utf8');
}

/**
 * The largest `n` in `0..max` whose answer `build(n)` fits `budget`, and that answer; null
 * when not even `build(0)` fits. `build` must grow with `n` (more items, longer text), so
 * a binary search finds it with log2(max) builds.
 */
export function largestFitting<A extends ToolAnswer>(max: number, budget: number, build: (n: number) => A): { n: number; answer: A } | null {
  const full = build(max);
  if (answerBytes(full) <= budget) return { n: max, answer: full };
  let lo = 0;
  let hi = max - 1;
  let best: { n: number; answer: A } | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const answer = build(mid);
    if (answerBytes(answer) <= budget) {
      best = { n: mid, answer };
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}

/**
 * `render(n)` for the largest `n` in `0..max` whose size `bytes` is at most `maxBytes`, or
 * null: a text cut shorter until it fits. `render` must grow with `n`.
 */
export function longestFitting<T>(max: number, maxBytes: number, render: (n: number) => T, bytes: (rendered: T) => number): T | null {
  let lo = 0;
  let hi = max;
  let best: T | null = null;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    const candidate = render(mid);
    if (bytes(candidate) <= maxBytes) {
      best = candidate;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}

/**
 * Items read from `source` until their own sizes alone pass `budget` (no page can hold
 * more), plus one: whether there is a next page is known without reading further.
 */
export function takeCandidates<T>(source: Iterable<T>, budget: number, size: (item: T) => number): { items: T[]; more: boolean } {
  const items: T[] = [];
  let bytes = 0;
  for (const item of source) {
    if (bytes > budget) return { items, more: true };
    items.push(item);
    bytes += size(item);
  }
  return { items, more: false };
}
