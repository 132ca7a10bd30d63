/**
 * Line colours of the report's charts, chosen here (not in the page's script) so a run's
 * swatch in the page and its lines on every chart are the same colour.
 */

/** Distinct on white and for the common colour blindnesses first (the first is the report's blue). */
export const PALETTE = ['#1f77b4', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];

/** The `i`-th colour: the palette, then hues a golden angle apart (never repeating). */
export function seriesColour(i: number): string {
  if (i < PALETTE.length) return PALETTE[i];
  const hue = ((i - PALETTE.length) * 137.508 + 15) % 360;
  return hslHex(hue, 0.65, 0.42);
}

function hslHex(h: number, s: number, l: number): string {
  const a = s * Math.min(l, 1 - l);
  const channel = (n: number) => {
    const k = (n + h / 30) % 12;
    const v = l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(v * 255).toString(16).padStart(2, '0');
  };
  return `#${channel(0)}${channel(8)}${channel(4)}`;
}
