// @ts-check
// The chart grid: one chart per chart group of the runs shown (the report's grouping, from
// the server), each run's min/max points as they stand, updated in place as deltas arrive.
// Several runs overlay on one axis (a colour per run, a dash per series); x by step, wall
// time or time since the run's start; EMA smoothing (TensorBoard's debiased form, on the
// drawn points) and a log scale (asinh when a series has values ≤ 0). Finding flags mark
// each finding's onset, shaded to its last step; a click on a flag opens the finding.
import { getJson, runPath } from './api.js';
import { fill, h } from './dom.js';
import { colour, SEVERITY_COLOURS } from './format.js';

/** @typedef {{ run: string, code: string, severity: string, onset: number, last: number }} Mark */

/** @param {number[]} xs @param {number} v: index of the first x ≥ v (xs ascending) */
function lowerBound(xs, v) {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** TensorBoard's debiased EMA over the points of one series (nulls kept). @param {(number|null)[]} ys @param {number} w */
export function ema(ys, w) {
  if (!(w > 0)) return ys;
  let last = 0;
  let n = 0;
  return ys.map((v) => {
    if (v === null || !Number.isFinite(v)) return v;
    last = last * w + (1 - w) * v;
    n++;
    return last / (1 - w ** n);
  });
}

/**
 * At most `budget` points of one run, for overlays: neighbouring points merge into buckets
 * that keep each series' lowest and highest value in the order they happened (as the
 * server's buckets do), at the bucket's first and last x, so a spike survives. Ten runs of
 * 4,000 points each would be 40,000 rows of mostly empty cells per chart: slow to draw, and
 * more than a chart's pixels.
 * @param {(number|null)[]} xs @param {(number|null)[][]} ys @param {number} budget
 * @returns {{ x: (number|null)[], ys: (number|null)[][] }}
 */
export function thin(xs, ys, budget) {
  const n = xs.length;
  if (n <= budget) return { x: xs, ys };
  const buckets = Math.max(1, Math.floor(budget / 2));
  const x = [];
  const out = ys.map(() => /** @type {(number|null)[]} */ ([]));
  for (let b = 0; b < buckets; b++) {
    const from = Math.floor((b * n) / buckets);
    const to = Math.floor(((b + 1) * n) / buckets);
    x.push(xs[from], xs[to - 1]);
    ys.forEach((col, k) => {
      let lo = Infinity;
      let hi = -Infinity;
      let iLo = -1;
      let iHi = -1;
      for (let i = from; i < to; i++) {
        const v = col[i];
        if (v === null || v === undefined) continue;
        if (v < lo) [lo, iLo] = [v, i];
        if (v > hi) [hi, iHi] = [v, i];
      }
      if (iLo < 0) out[k].push(null, null);
      else out[k].push(...(iLo <= iHi ? [lo, hi] : [hi, lo]));
    });
  }
  return { x, ys: out };
}

/**
 * A run's live points with those of steps `from`..`to` replaced by `range`'s (a zoom's).
 * @param {any} live @param {any} range @param {number} from @param {number} to
 */
export function splice(live, range, from, to) {
  const steps = live.x.step;
  const before = lowerBound(steps, from);
  let after = lowerBound(steps, to);
  while (after < steps.length && steps[after] <= to) after++;
  const join = (/** @type {any[]} */ a, /** @type {any[] | undefined} */ mid) => [...a.slice(0, before), ...(mid ?? new Array(range.x.step.length).fill(null)), ...a.slice(after)];
  /** @type {Record<string, any>} */
  const series = {};
  for (const [c, ys] of Object.entries(live.series)) series[c] = join(/** @type {any[]} */ (ys), range.series[c]);
  /** @type {Record<string, any>} */
  const bands = {};
  for (const [k, b] of Object.entries(live.bands)) bands[k] = { lo: join(/** @type {any} */ (b).lo, range.bands[k]?.lo), hi: join(/** @type {any} */ (b).hi, range.bands[k]?.hi) };
  return { ...live, x: { step: join(steps, range.x.step), time: join(live.x.time, range.x.time) }, series, bands };
}

/**
 * A dashed vertical line across the plot at canvas x `x`.
 * @param {CanvasRenderingContext2D} ctx @param {number} x @param {number} top @param {number} height @param {string} colour @param {number[]} dash @param {number} width
 */
function vline(ctx, x, top, height, colour, dash, width) {
  ctx.strokeStyle = colour;
  ctx.setLineDash(dash);
  ctx.lineWidth = width;
  ctx.beginPath();
  ctx.moveTo(x, top);
  ctx.lineTo(x, top + height);
  ctx.stroke();
  ctx.setLineDash([]);
}

/**
 * The steps of a run a zoom to x in `min`..`max` must read: the range itself by step; by
 * wall time, from the live point before the first one in view to the one after the last
 * (the rows between two buckets can lie in view when no point does). Null: nothing of the
 * run can be in view.
 * @param {any} pts @param {string} mode @param {number} min @param {number} max
 * @returns {{ from: number, to: number } | null}
 */
export function stepRange(pts, mode, min, max) {
  if (mode === 'step') return { from: Math.floor(min), to: Math.ceil(max) };
  const xs = xsOf(pts, mode);
  const steps = pts.x.step;
  let first = -1;
  let last = -1;
  let before = -1;
  xs.forEach((/** @type {number|null} */ x, /** @type {number} */ i) => {
    if (x === null) return;
    if (x >= min && x <= max) {
      if (first < 0) first = i;
      last = i;
    } else if (x < min && first < 0) before = i;
  });
  if (first < 0) {
    // between two points, or outside the run
    if (before < 0 || before + 1 >= steps.length) return null;
    return { from: steps[before], to: steps[before + 1] };
  }
  return { from: steps[Math.max(0, first - 1)], to: steps[Math.min(steps.length - 1, last + 1)] };
}

/** Points a chart draws at most, all runs together. */
const POINTS_PER_CHART = 4000;

/** The x of each of a run's points in the chosen mode. @param {any} pts @param {string} mode */
function xsOf(pts, mode) {
  if (mode === 'step') return pts.x.step;
  const t0 = pts.x.time.find((/** @type {number|null} */ t) => t !== null) ?? 0;
  return pts.x.time.map((/** @type {number|null} */ t) => (t === null ? null : mode === 'elapsed' ? t - t0 : t));
}

export class ChartsView {
  /**
   * @param {HTMLElement} el
   * @param {any} state
   * @param {(run: string, code: string) => void} openFinding
   */
  constructor(el, state, openFinding) {
    this.el = el;
    this.state = state;
    this.openFinding = openFinding;
    /** @type {Map<string, any>} */
    this.charts = new Map();
    /** How long the last full render took. */
    this.timing = { renderMs: 0, buildMs: 0 };
  }

  destroy() {
    for (const c of this.charts.values()) c.u.destroy();
    this.charts.clear();
  }

  /** The charts of the runs shown, merged by chart id in the order the first run lists them. */
  groups() {
    /** @type {Map<string, { id: string, title: string, axes: (string|null)[], entries: { run: string, ri: number, spec: any }[] }>} */
    const groups = new Map();
    this.state.selected.forEach((/** @type {string} */ run, /** @type {number} */ ri) => {
      const data = this.state.data.get(run);
      if (!data) return;
      for (const spec of data.specs) {
        let g = groups.get(spec.id);
        if (!g) groups.set(spec.id, (g = { id: spec.id, title: spec.title, axes: spec.axes, entries: [] }));
        g.entries.push({ run, ri, spec });
      }
    });
    return [...groups.values()];
  }

  /** Draws every chart again (the runs, the x mode or the scale changed). */
  render() {
    this.destroy();
    const groups = this.groups();
    const grid = h('div', { class: 'grid' });
    fill(this.el, grid);
    if (groups.length === 0) {
      fill(this.el, h('div', { class: 'empty' }, this.state.selected.length ? 'No step has been logged yet.' : 'Tick one run or more in the list to chart them.'));
      return;
    }
    const t0 = performance.now();
    let building = 0;
    for (const g of groups) {
      const fig = h('figure', { class: 'chart', 'data-chart': g.id }, h('figcaption', null, g.title));
      grid.appendChild(fig);
      building += this.draw(fig, g);
    }
    // for the dashboard's own figures (benches/serve.ts): the whole render, and the data preparation in it
    this.timing = { renderMs: performance.now() - t0, buildMs: building };
  }

  /** New points arrived: charts whose shape is unchanged take the data in place. */
  update() {
    const groups = this.groups();
    if (groups.length !== this.charts.size || groups.some((g) => !this.charts.has(g.id))) return this.render();
    for (const g of groups) {
      const held = this.charts.get(g.id);
      const built = this.build(g);
      if (!held || held.shape !== built.shape) return this.render();
      held.marks = built.marks;
      held.full = built.data;
      // zoomed in: the zoom's own points stay until the zoom is reset (double-click)
      if (!held.zoom) held.u.setData(built.data);
      else held.u.redraw();
      this.annotate(held.u.root.parentElement, built);
    }
  }

  /**
   * The x scale of chart `id` changed: zoomed in past the live buckets (by step or by wall
   * time), each run's rows in the range are fetched at full resolution (min/max buckets of
   * 2,000 points when more); zoomed back out, the live points return.
   * @param {string} id @param {any} g
   */
  onScale(id, g) {
    const held = this.charts.get(id);
    if (!held) return;
    const mode = this.state.x;
    const u = held.u;
    const { min, max } = u.scales.x;
    const xs = held.full[0];
    const whole = xs.length === 0 || (min <= xs[0] && max >= xs[xs.length - 1]);
    if (whole) {
      if (held.zoom) {
        held.zoom = null;
        u.root.parentElement.removeAttribute('data-zoomed');
        u.setData(held.full);
      }
      return;
    }
    if (held.zoom && held.zoom.min === min && held.zoom.max === max) return;
    const zoom = { min, max };
    held.zoom = zoom;
    const pending = [];
    for (const e of g.entries) {
      const range = stepRange(this.state.data.get(e.run).points, mode, min, max);
      if (range === null) continue;
      const bands = e.spec.bands.map((/** @type {any} */ b) => `${e.spec.series[b.of].column}:${b.column}`).join(',');
      const cols = e.spec.series.map((/** @type {any} */ x) => x.column).join(',');
      const url = `${runPath(e.run)}/series?columns=${encodeURIComponent(cols)}&from=${range.from}&to=${range.to}&points=2000${bands ? `&bands=${encodeURIComponent(bands)}` : ''}`;
      pending.push(getJson(url).then((/** @type {any} */ p) => /** @type {[string, any, { from: number, to: number }]} */ ([e.run, p, range])));
    }
    Promise.all(pending)
      .then((answers) => {
        // a later zoom, a reset or a new render took over meanwhile
        if (this.charts.get(id) !== held || held.zoom !== zoom) return;
        // the range at full resolution between the live points around it: uPlot's reset
        // (double-click) then spans the whole run again, which onScale takes as zoomed out
        const merged = new Map(answers.map(([run, p, r]) => [run, splice(this.state.data.get(run).points, p, r.from, r.to)]));
        const built = this.build(g, merged);
        if (built.shape !== held.shape) return;
        held.marks = built.marks;
        u.setData(built.data, false);
        // by step, the steps read; by time, the x range (seconds, to the millisecond)
        const shown = mode === 'step' ? `${Math.floor(min)}..${Math.ceil(max)}` : `${mode}:${min.toFixed(3)}..${max.toFixed(3)}`;
        u.root.parentElement.setAttribute('data-zoomed', shown);
        u.root.parentElement.setAttribute('data-zoom-points', String(answers.reduce((n, [, p]) => n + p.x.step.length, 0)));
      })
      .catch(() => {
        if (held.zoom === zoom) held.zoom = null;
      });
  }

  /**
   * The series, bands, data and marks of chart group `g` (from `points`' points of a run when
   * given: a zoom's, else the live ones).
   * @param {any} g @param {Map<string, any>} [points]
   */
  build(g, points) {
    const st = this.state;
    const multi = st.selected.length > 1;
    /** @type {{ x: (number|null)[], ys: (number|null)[][], run: string }[]} */
    const perRun = [];
    /** @type {any[]} */
    const series = [{}];
    /** @type {any[]} */
    const bands = [];
    const marks = /** @type {Mark[]} */ ([]);
    let lastStep = -Infinity;
    for (const { run, ri, spec } of g.entries) {
      const pts = points?.get(run) ?? st.data.get(run).points;
      const name = st.runs.get(run)?.id ?? run;
      const ys = [];
      spec.series.forEach((/** @type {any} */ s, /** @type {number} */ si) => {
        ys.push(ema(pts.series[s.column] ?? [], st.ema));
        series.push({ label: multi ? `${name}: ${s.label}` : s.label, stroke: multi ? colour(ri) : colour(si), width: 1.5, dash: multi && si > 0 ? [5, 3] : undefined, scale: s.axis === 1 ? 'y2' : 'y', spanGaps: true, points: { show: false } });
      });
      if (!multi) {
        for (const b of spec.bands) {
          const band = pts.bands[`${spec.series[b.of].column}\u0000${b.column}`];
          if (!band) continue;
          const at = series.length;
          ys.push(band.lo, band.hi);
          const c = colour(b.of);
          series.push({ label: `${b.label} (low)`, stroke: `${c}55`, width: 0.5, scale: 'y', spanGaps: true, points: { show: false } });
          series.push({ label: `${b.label} (high)`, stroke: `${c}55`, width: 0.5, scale: 'y', spanGaps: true, points: { show: false } });
          bands.push({ series: [at + 1, at], fill: `${c}22` });
        }
      }
      // one run draws its points as they are; an overlay shares the chart's budget
      const budget = multi ? Math.max(400, Math.floor(POINTS_PER_CHART / st.selected.length)) : Infinity;
      const thinned = thin(xsOf(pts, st.x), ys, budget);
      perRun.push({ x: thinned.x, ys: thinned.ys, run });
      const steps = pts.x.step;
      if (steps.length) lastStep = Math.max(lastStep, steps[steps.length - 1]);
      for (const f of st.findings.get(run) ?? []) {
        const touches = (Array.isArray(f.columns) ? f.columns : []).some((/** @type {string} */ c) => spec.series.some((/** @type {any} */ s) => s.column === c));
        if (touches || g.id === 'reward') marks.push({ run, code: f.code, severity: f.severity, onset: f.onset_step, last: f.last_step });
      }
    }
    // one table: every run's points in x order, each row holding only its own run's values
    const rows = [];
    let offset = 0;
    for (const r of perRun) {
      for (let i = 0; i < r.x.length; i++) if (r.x[i] !== null) rows.push({ x: /** @type {number} */ (r.x[i]), r, i, offset });
      offset += r.ys.length;
    }
    rows.sort((a, b) => a.x - b.x);
    const width = offset;
    const data = [rows.map((p) => p.x)];
    for (let k = 0; k < width; k++) data.push(new Array(rows.length).fill(null));
    rows.forEach((p, j) => {
      for (let k = 0; k < p.r.ys.length; k++) data[1 + p.offset + k][j] = p.r.ys[k][p.i] ?? null;
    });
    const usesRight = series.some((s) => s.scale === 'y2');
    const shape = JSON.stringify([st.x, st.log, series.map((s) => [s.label, s.scale]), bands.length]);
    return { series, bands, data, marks, shape, usesRight, lastStep, perRun };
  }

  /** Draws chart group `g` into `fig`; returns the ms its data took to prepare. @param {HTMLElement} fig @param {any} g */
  draw(fig, g) {
    const t0 = performance.now();
    const built = this.build(g);
    const buildMs = performance.now() - t0;
    const st = this.state;
    const view = this;
    const logDistr = (/** @type {number} */ idx) => {
      // asinh when any value on this axis is ≤ 0: log cannot show it
      const scale = idx === 0 ? 'y' : 'y2';
      let positive = true;
      built.series.forEach((s, k) => {
        if (k === 0 || s.scale !== scale) return;
        for (const v of built.data[k]) if (v !== null && v <= 0) positive = false;
      });
      return positive ? { distr: 3 } : { distr: 4, asinh: 1 };
    };
    const scaleOf = (/** @type {number} */ idx) => (st.log ? logDistr(idx) : {});
    const opts = {
      width: Math.max(300, (fig.clientWidth || 520) - 14),
      height: 230,
      series: built.series,
      bands: built.bands,
      scales: { x: { time: st.x === 'time' }, y: scaleOf(0), y2: scaleOf(1) },
      axes: [{ label: st.x === 'step' ? 'step' : st.x === 'time' ? undefined : 'seconds since start' }, { label: g.axes[0] ?? '', scale: 'y' }, ...(built.usesRight ? [{ label: g.axes[1] ?? '', scale: 'y2', side: 1, grid: { show: false } }] : [])],
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      hooks: {
        draw: [(/** @type {any} */ u) => view.drawMarks(u)],
        setScale: [(/** @type {any} */ _u, /** @type {string} */ key) => key === 'x' && view.onScale(g.id, g)],
      },
    };
    // @ts-ignore: uPlot is the classic script loaded before this module
    const u = new uPlot(opts, built.data, fig);
    /** @type {any} */
    const entry = { u, shape: built.shape, marks: built.marks, perRun: built.perRun, full: built.data, zoom: null };
    this.charts.set(g.id, entry);
    u.over.addEventListener('click', (/** @type {MouseEvent} */ e) => {
      const hit = this.markAt(u, e.offsetX);
      if (hit) this.openFinding(hit.run, hit.code);
    });
    this.annotate(fig, built);
    return buildMs;
  }

  /** Test and reader hooks on the figure: rendered, last step, marks. @param {HTMLElement} fig @param {any} built */
  annotate(fig, built) {
    fig.setAttribute('data-rendered', '1');
    fig.setAttribute('data-last-step', String(built.lastStep === -Infinity ? '' : built.lastStep));
    fig.setAttribute('data-marks', String(built.marks.length));
    fig.setAttribute('data-events', String(this.events().length));
    fig.setAttribute('data-series', String(built.series.length - 1));
    fig.setAttribute('data-points', String(built.data[0].length));
  }

  /** The x where a mark's step is, in this chart's x mode. @param {Mark} m @param {number} step */
  xOfStep(m, step) {
    const pts = this.state.data.get(m.run)?.points;
    if (!pts) return null;
    if (this.state.x === 'step') return step;
    const i = Math.min(pts.x.step.length - 1, lowerBound(pts.x.step, step));
    const xs = xsOf(pts, this.state.x);
    return i >= 0 ? xs[i] : null;
  }

  /** @param {any} u */
  drawMarks(u) {
    const held = [...this.charts.values()].find((c) => c.u === u);
    const marks = held ? held.marks : [];
    const ctx = u.ctx;
    const top = u.bbox.top;
    const height = u.bbox.height;
    ctx.save();
    for (const m of marks) {
      const x0 = this.xOfStep(m, m.onset);
      const x1 = this.xOfStep(m, m.last);
      if (x0 === null) continue;
      const c = SEVERITY_COLOURS[/** @type {keyof typeof SEVERITY_COLOURS} */ (m.severity)] ?? '#555';
      const p0 = u.valToPos(x0, 'x', true);
      const p1 = x1 === null ? p0 : u.valToPos(x1, 'x', true);
      ctx.fillStyle = `${c}18`;
      ctx.fillRect(p0, top, Math.max(1, p1 - p0), height);
      vline(ctx, p0, top, height, c, [4, 3], 1.5);
      ctx.fillStyle = c;
      ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
      ctx.textAlign = 'left';
      ctx.textBaseline = 'alphabetic';
      const multi = this.state.selected.length > 1;
      ctx.fillText(multi ? `${this.state.runs.get(m.run)?.id ?? m.run}: ${m.code}` : m.code, p0 + 3, top + 12 * devicePixelRatio);
    }
    // the run's own events at their steps: a checkpoint, a crash, a halt, a resume
    ctx.font = `${10 * devicePixelRatio}px system-ui, sans-serif`;
    for (const e of this.events()) {
      const x = this.xOfStep({ run: e.run, code: '', severity: '', onset: e.step, last: e.step }, e.step);
      if (x === null) continue;
      const p = u.valToPos(x, 'x', true);
      const c = e.kind === 'checkpoint' ? '#7f7f7f' : '#9467bd';
      vline(ctx, p, top, height, c, [1, 3], 1);
      ctx.fillStyle = c;
      ctx.fillText(e.kind, p + 2, top + height - 4 * devicePixelRatio);
    }
    ctx.restore();
  }

  /** The shown runs' events that have a step, each with its run. @returns {{ run: string, kind: string, step: number }[]} */
  events() {
    return this.state.selected.flatMap((/** @type {string} */ run) => (this.state.events.get(run) ?? []).filter((/** @type {any} */ e) => e.step !== null).map((/** @type {any} */ e) => ({ run, kind: e.kind, step: e.step })));
  }

  /** The mark whose flag is within 6 px of `offsetX` (CSS pixels over the plot). @param {any} u @param {number} offsetX */
  markAt(u, offsetX) {
    const held = [...this.charts.values()].find((c) => c.u === u);
    for (const m of held?.marks ?? []) {
      const x0 = this.xOfStep(m, m.onset);
      if (x0 !== null && Math.abs(u.valToPos(x0, 'x') - offsetX) <= 6) return m;
    }
    return null;
  }
}
