// @ts-check
// The page: state (in the URL's hash, so a view can be bookmarked), the run list, the tabs,
// and the one event stream that keeps it live.
import { getJson, openStream, runPath } from './api.js';
import { ChartsView } from './charts.js';
import { renderDiff } from './diff.js';
import { fill, h } from './dom.js';
import { Drawer } from './drill.js';
import { isoTime, num } from './format.js';
import { renderRuns } from './runs.js';
import { renderSamples } from './samples.js';

const TABS = [['charts', 'Charts'], ['samples', 'Samples'], ['diff', 'Diff'], ['run', 'Run']];

const state = {
  /** @type {Map<string, any>} run rows by key */
  runs: new Map(),
  /** @type {string[]} */
  selected: [],
  tab: 'charts',
  x: 'step',
  ema: 0,
  log: false,
  filters: { name: '', algorithm: '', model: '', status: '', finding: false },
  /** @type {Map<string, any>} chart points by run */
  data: new Map(),
  /** @type {Map<string, any[]>} findings by run */
  findings: new Map(),
  /** @type {Map<string, any[]>} events drawn on the charts (checkpoint, crash, signal, auto_halt, resume) by run */
  events: new Map(),
  notSearched: 0,
  /** @type {Record<string, string>} */
  sampleQuery: {},
  /** @type {Record<string, string>} */
  diff: {},
};

/** Hooks for tests and for measuring: every chart update, when it landed. */
const hooks = { updates: /** @type {any[]} */ ([]), ready: false };
/** @type {any} */ (window).__rlprobeServe = hooks;

const drawer = new Drawer(/** @type {HTMLElement} */ (document.getElementById('drawer')));
const main = /** @type {HTMLElement} */ (document.getElementById('main'));
const runsEl = /** @type {HTMLElement} */ (document.getElementById('runs'));
const tabsEl = /** @type {HTMLElement} */ (document.getElementById('tabs'));
const conn = /** @type {HTMLElement} */ (document.getElementById('conn'));
const chartsEl = h('div', { class: 'charts' });
const charts = new ChartsView(chartsEl, state, (run, code) => drawer.finding(run, code));
/** @type {any} */ (hooks).charts = charts;
/** @type {EventSource | null} */
let stream = null;
/** Bumped by each renderMain: a tab whose answer comes after the reader moved on drops it. */
let mainRenders = 0;

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  state.selected = (p.get('runs') ?? '').split(',').filter((k) => /^[0-9a-f]{16}$/.test(k));
  state.tab = TABS.some(([t]) => t === p.get('tab')) ? /** @type {string} */ (p.get('tab')) : 'charts';
  state.x = ['step', 'time', 'elapsed'].includes(p.get('x') ?? '') ? /** @type {string} */ (p.get('x')) : 'step';
  const e = Number(p.get('ema'));
  state.ema = e >= 0 && e < 1 ? e : 0;
  state.log = p.get('log') === '1';
}

function writeHash() {
  const p = new URLSearchParams();
  if (state.selected.length) p.set('runs', state.selected.join(','));
  p.set('tab', state.tab);
  p.set('x', state.x);
  if (state.ema) p.set('ema', String(state.ema));
  if (state.log) p.set('log', '1');
  history.replaceState(null, '', `#${p}`);
}

function renderList() {
  renderRuns(runsEl, state, { toggle, filter: renderList });
}

function renderTabs() {
  fill(tabsEl, TABS.map(([t, label]) => h('button', { 'aria-selected': String(state.tab === t), 'data-tab': t, on: { click: () => ((state.tab = t), writeHash(), renderMain()) } }, label)));
}

/** @param {string} key */
function toggle(key) {
  state.selected = state.selected.includes(key) ? state.selected.filter((k) => k !== key) : [...state.selected, key];
  writeHash();
  reopen();
  renderList();
}

function renderMain() {
  mainRenders++;
  renderTabs();
  charts.destroy();
  if (state.tab === 'charts') return renderChartsTab();
  if (state.tab === 'samples') return renderSamples(main, state, drawer);
  if (state.tab === 'diff') return renderDiff(main, state);
  return renderRunTab();
}

function renderChartsTab() {
  const controls = h(
    'div',
    { class: 'controls' },
    h('label', null, 'x ', h('select', { name: 'x', on: { change: (/** @type {Event} */ e) => ((state.x = /** @type {HTMLSelectElement} */ (e.target).value), writeHash(), charts.render()) } }, [['step', 'step'], ['time', 'wall time'], ['elapsed', 'time since start']].map(([v, l]) => h('option', { value: v, selected: state.x === v }, l)))),
    h('label', null, 'smoothing ', h('input', { type: 'range', name: 'ema', min: '0', max: '0.99', step: '0.01', value: String(state.ema), on: { change: (/** @type {Event} */ e) => ((state.ema = Number(/** @type {HTMLInputElement} */ (e.target).value)), writeHash(), charts.render()) } })),
    h('label', null, h('input', { type: 'checkbox', name: 'log', checked: state.log, on: { change: (/** @type {Event} */ e) => ((state.log = /** @type {HTMLInputElement} */ (e.target).checked), writeHash(), charts.render()) } }), ' log scale'),
    h('span', { class: 'muted' }, 'Charts show each bucket’s lowest and highest value; smoothing applies to those points. Drag to zoom, double-click to reset.'),
  );
  fill(main, controls, findingsList(), chartsEl);
  charts.render();
}

function findingsList() {
  const items = state.selected.flatMap((run) => (state.findings.get(run) ?? []).map((f) => ({ run, f })));
  return h(
    'div',
    { class: 'findings', 'data-findings': items.length },
    items.length === 0 ? h('div', { class: 'muted' }, state.selected.length ? 'No findings (yet).' : '') : null,
    items.map(({ run, f }) =>
      h(
        'div',
        { class: 'finding', 'data-code': f.code, 'data-run': run },
        h('span', { class: `chip ${f.severity}` }, f.severity),
        h('button', { class: 'link open-finding', on: { click: () => drawer.finding(run, f.code) } }, state.selected.length > 1 ? `${state.runs.get(run)?.id}: ${f.code}` : f.code),
        h('span', { class: 'muted' }, ` from step ${f.onset_step} · ${f.message}`),
      ),
    ),
  );
}

async function renderRunTab() {
  const key = state.selected[0] ?? [...state.runs.keys()][0];
  if (!key) return fill(main, h('div', { class: 'empty' }, 'No run.'));
  const render = mainRenders;
  fill(main, h('div', { class: 'muted' }, 'loading…'));
  try {
    const [info, events] = await Promise.all([getJson(runPath(key)), getJson(`${runPath(key)}/events`)]);
    if (render !== mainRenders) return;
    const r = info.run;
    fill(
      main,
      h('h2', null, r.id),
      h('p', { class: 'muted' }, `${r.path} · ${r.status.badge}: ${r.status.detail} · layout ${info.layout} · ${r.rows} steps`),
      info.damaged.length ? [h('h3', null, 'Damaged files'), info.damaged.map((/** @type {any} */ d) => h('div', { class: 'err' }, `${d.path}: ${d.reason}`))] : null,
      info.foreign.length ? [h('h3', null, 'Files not ours (skipped)'), info.foreign.map((/** @type {any} */ d) => h('div', { class: 'muted' }, `${d.path}: ${d.reason}`))] : null,
      h('h3', null, 'Manifest'),
      h('pre', { class: 'text manifest' }, JSON.stringify(info.manifest, null, 2)),
      h('h3', null, `Step columns (${info.columns.length})`),
      h('p', { class: 'muted' }, info.columns.map((/** @type {any} */ c) => c.name).join(', ')),
      h('h3', null, `Events (last ${events.events.length})`),
      h('table', { class: 'list events' }, events.events.slice(-200).map((/** @type {any} */ e) => h('tr', null, h('td', null, isoTime(e.timestamp)), h('td', null, e.kind), h('td', null, e.step === null ? '' : num(e.step)), h('td', null, e.message)))),
    );
  } catch (e) {
    if (render !== mainRenders) return;
    fill(main, h('div', { class: 'err' }, String(/** @type {Error} */ (e).message)));
  }
}

/** Loads the chart points of `key` in full (first view, a missed delta, a reconnect). @param {string} key */
async function loadCharts(key) {
  const snap = await getJson(`${runPath(key)}/charts`);
  state.data.set(key, { specs: snap.specs, points: snap.points, generation: snap.points.generation });
  state.events.set(key, snap.marks);
  hooks.updates.push({ run: key, rows: snap.points.rows, at: Date.now(), full: true });
}

/** @param {string} key */
async function loadFindings(key) {
  const d = await getJson(`${runPath(key)}/findings`);
  state.findings.set(key, d.findings);
}

/** Applies a `series` delta: points from `from` on replace what the page holds. @param {any} m */
async function onSeries(m) {
  const held = state.data.get(m.run);
  if (!state.selected.includes(m.run)) return;
  if (!held || held.generation !== m.generation) {
    if (m.from === 0 && m.specs) state.data.set(m.run, { specs: m.specs, points: m, generation: m.generation });
    else await loadCharts(m.run);
  } else {
    if (m.rows <= held.points.rows) return;
    const p = held.points;
    if (m.from > p.x.step.length) {
      await loadCharts(m.run);
    } else {
      if (m.specs) held.specs = m.specs;
      const cut = (/** @type {any[]} */ a, /** @type {any[]} */ b) => {
        a.splice(m.from);
        a.push(...b);
      };
      cut(p.x.step, m.x.step);
      cut(p.x.time, m.x.time);
      for (const [c, ys] of Object.entries(m.series)) {
        if (!p.series[c]) p.series[c] = new Array(m.from).fill(null);
        cut(p.series[c], ys);
      }
      for (const [c, ys] of Object.entries(p.series)) {
        if (m.series[c]) continue;
        ys.splice(m.from);
        ys.push(...new Array(m.x.step.length).fill(null));
      }
      for (const [k, b] of Object.entries(m.bands)) {
        p.bands[k] ??= { lo: new Array(m.from).fill(null), hi: new Array(m.from).fill(null) };
        cut(p.bands[k].lo, /** @type {any} */ (b).lo);
        cut(p.bands[k].hi, /** @type {any} */ (b).hi);
      }
      p.rows = m.rows;
      p.width = m.width;
    }
  }
  hooks.updates.push({ run: m.run, rows: m.rows, at: Date.now(), sentAt: m.at });
  if (state.tab === 'charts') charts.update();
}

/** (Re)opens the stream for the runs shown, then loads what it does not carry. */
function reopen() {
  stream?.close();
  const runs = [...state.selected];
  stream = openStream(
    runs,
    {
      hello: () => {
        // a reconnect: the server keeps no replay, so take each run in full again
        Promise.all(runs.map((k) => Promise.all([loadCharts(k), loadFindings(k)]).catch(() => undefined))).then(() => {
          hooks.ready = true;
          if (state.tab === 'charts') renderChartsTab();
        });
      },
      runs: (m) => {
        for (const r of m.added ?? []) state.runs.set(r.key, r);
        // a change to a run the page no longer lists (removed meanwhile) does not bring it back
        for (const r of m.changed ?? []) if (state.runs.has(r.key)) state.runs.set(r.key, r);
        for (const k of m.removed ?? []) state.runs.delete(k);
        renderList();
      },
      series: (m) => void onSeries(m),
      findings: (m) => {
        state.findings.set(m.run, m.findings);
        if (state.tab === 'charts' && state.selected.includes(m.run)) {
          const list = main.querySelector('.findings');
          if (list) list.replaceWith(findingsList());
          charts.update();
        }
      },
      marks: (m) => {
        state.events.set(m.run, [...(state.events.get(m.run) ?? []), ...m.marks].slice(-500));
        if (state.tab === 'charts' && state.selected.includes(m.run)) charts.update();
      },
    },
    (open) => {
      conn.textContent = open ? 'live' : 'reconnecting…';
      conn.classList.toggle('live', open);
    },
  );
}

async function start() {
  readHash();
  const list = await getJson('/api/runs');
  for (const r of list.runs) state.runs.set(r.key, r);
  state.notSearched = list.not_searched_total;
  state.selected = state.selected.filter((k) => state.runs.has(k));
  renderList();
  renderMain();
  reopen();
  window.addEventListener('hashchange', () => {
    const before = state.selected.join(',');
    readHash();
    if (state.selected.join(',') !== before) reopen();
    renderList();
    renderMain();
  });
  // "3 min ago" stays true
  setInterval(renderList, 30_000);
}

start().catch((e) => fill(main, h('div', { class: 'err' }, `The dashboard could not start: ${String(e.message ?? e)}`)));
