/**
 * How many terminal columns a string takes: East Asian wide and fullwidth characters and
 * emoji take two, combining marks none, everything else one (text arrives here with its
 * control characters already escaped). Enough to keep a table's columns aligned for
 * prompts in Chinese, Japanese or Korean.
 */
const WIDE: ReadonlyArray<readonly [number, number]> = [
  [0x1100, 0x115f],
  [0x231a, 0x231b],
  [0x2329, 0x232a],
  [0x23e9, 0x23ec],
  [0x2e80, 0x303e],
  [0x3041, 0x33ff],
  [0x3400, 0x4dbf],
  [0x4e00, 0x9fff],
  [0xa000, 0xa4cf],
  [0xa960, 0xa97f],
  [0xac00, 0xd7a3],
  [0xf900, 0xfaff],
  [0xfe10, 0xfe19],
  [0xfe30, 0xfe6f],
  [0xff00, 0xff60],
  [0xffe0, 0xffe6],
  [0x1f300, 0x1f64f],
  [0x1f900, 0x1f9ff],
  [0x20000, 0x3fffd],
];

const COMBINING = /^[\p{Mn}\p{Me}]$/u;

function charWidth(c: string): number {
  const code = c.codePointAt(0)!;
  if (code < 0x300) return 1;
  // combining marks, zero-width spaces and joiners, variation selectors
  if (COMBINING.test(c) || (code >= 0x200b && code <= 0x200f) || (code >= 0xfe00 && code <= 0xfe0f)) return 0;
  for (const [lo, hi] of WIDE) if (code >= lo && code <= hi) return 2;
  return 1;
}

export function displayWidth(text: string): number {
  let w = 0;
  for (const c of text) w += charWidth(c);
  return w;
}

/** `text` cut to at most `max` columns, ending in `…` when cut. */
export function cutToWidth(text: string, max: number): { text: string; cut: boolean } {
  if (displayWidth(text) <= max) return { text, cut: false };
  let w = 0;
  let out = '';
  for (const c of text) {
    const cw = charWidth(c);
    if (w + cw > max - 1) break;
    out += c;
    w += cw;
  }
  return { text: `${out}…`, cut: true };
}
