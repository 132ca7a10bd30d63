/**
 * A page of items under the byte budget: as many items from the cursor's offset as fit
 * with the answer's envelope, and the cursor of the next page when there are more.
 */
import { answerBytes, largestFitting, takeCandidates } from './budget.js';
import type { ToolAnswer } from './budget.js';
import { makeCursor } from './cursor.js';
import { ToolError } from './tool-error.js';

export interface PageRequest<T, A extends ToolAnswer> {
  tool: string;
  args: Record<string, unknown>;
  budget: number;
  /** Where this page starts among all the items. */
  offset: number;
  /** The items from `offset` on (read lazily: only what a page can hold is read). */
  items: Iterable<T>;
  /** An item's own cost in bytes (text and JSON), to stop reading early. */
  size: (item: T) => number;
  /** The answer holding `page`, with `next` as its next_cursor. */
  build: (page: T[], next: string | null) => A;
  /** What one item is called, for the message when a single one cannot fit. */
  noun: string;
  /**
   * The item cut down to `maxBytes` (its own size), for an item too large for any page:
   * its texts cut shorter, each cut marked. Without it such an item is a ToolError.
   */
  refit?: (item: T, maxBytes: number) => T;
}

/** The answer for the page at `offset`; throws ToolError when not even one item fits. */
export function pageOf<T, A extends ToolAnswer>(req: PageRequest<T, A>): A {
  const { items, more } = takeCandidates(req.items, req.budget, req.size);
  const cursorAt = (n: number) => (n < items.length || more ? makeCursor(req.tool, req.args, { offset: req.offset + n }) : null);
  const fit = largestFitting(items.length, req.budget, (n) => req.build(items.slice(0, n), cursorAt(n)));
  if (fit === null) throw new ToolError(`the answer's envelope alone is over the byte budget of ${req.budget} bytes (raise --max-bytes)`);
  if (fit.n === 0 && items.length > 0) {
    if (req.refit) {
      // the envelope around one item differs a little from the empty one: shrink by the overshoot
      let room = req.budget - answerBytes(req.build([], cursorAt(1)));
      for (let attempt = 0; attempt < 4 && room > 0; attempt++) {
        const answer = req.build([req.refit(items[0], room)], cursorAt(1));
        const over = answerBytes(answer) - req.budget;
        if (over <= 0) return answer;
        room -= over;
      }
    }
    const alone = answerBytes(req.build(items.slice(0, 1), cursorAt(1)));
    throw new ToolError(`one ${req.noun} takes ${alone} bytes, over the byte budget of ${req.budget} bytes: ask for less of it (shorter texts, fewer points, less depth) or raise --max-bytes`);
  }
  return fit.answer;
}

/** The cost of an item: its JSON and its text line. */
export function itemBytes(json: unknown, text: string): number {
  return Buffer.byteLength(JSON.stringify(json)) + Buffer.byteLength(text) + 2;
}
