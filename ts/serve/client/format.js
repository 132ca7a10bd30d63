// @ts-check
// Numbers, times and words as the page shows them.

/** @param {unknown} v */
export function num(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v; // NaN / Infinity arrive as strings
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

/** @param {string | null} iso */
export function ago(iso) {
  if (!iso) return 'never';
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export const SEVERITY_COLOURS = { critical: '#d62728', warn: '#ff7f0e', info: '#1f77b4' };

/** Line colours: the report's palette, then more. */
export const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

/** @param {number} i */
export function colour(i) {
  return PALETTE[i % PALETTE.length];
}

/** Unix seconds as an ISO time; the raw value when no Date can hold it. @param {unknown} seconds */
export function isoTime(seconds) {
  const ms = typeof seconds === 'number' ? seconds * 1000 : NaN;
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : String(seconds);
}
