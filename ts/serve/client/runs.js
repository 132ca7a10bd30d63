// @ts-check
// The run list: filters (name, algorithm, model, status, has a finding), a status badge,
// steps, last write and finding chips per run, and a checkbox to chart it.
import { fill, h } from './dom.js';
import { ago } from './format.js';

const BADGE_CLASS = { live: 'live', closed: 'closed', 'ended without close': 'ended', unknown: 'unknown' };

/**
 * @param {HTMLElement} el
 * @param {any} state
 * @param {{ toggle: (key: string) => void, filter: () => void }} on
 */
export function renderRuns(el, state, on) {
  const runs = [...state.runs.values()];
  const f = state.filters;
  // the filters are built once, so typing in one keeps its focus while the list refreshes
  let panel = /** @type {HTMLElement | null} */ (el.querySelector('.filters'));
  if (!panel) {
    const select = (/** @type {string} */ field, /** @type {string} */ label) => h('select', { 'aria-label': label, 'data-filter': field, on: { change: (/** @type {Event} */ e) => ((f[field] = /** @type {HTMLSelectElement} */ (e.target).value), on.filter()) } });
    panel = h(
      'div',
      { class: 'filters' },
      h('input', { type: 'search', placeholder: 'filter by name or path', value: f.name, 'aria-label': 'name filter', 'data-filter': 'name', on: { input: (/** @type {Event} */ e) => ((f.name = /** @type {HTMLInputElement} */ (e.target).value), on.filter()) } }),
      select('algorithm', 'algorithm'),
      select('model', 'model'),
      select('status', 'status'),
      h('label', null, h('input', { type: 'checkbox', checked: f.finding, 'data-filter': 'finding', on: { change: (/** @type {Event} */ e) => ((f.finding = /** @type {HTMLInputElement} */ (e.target).checked), on.filter()) } }), ' has a finding (warn or worse)'),
    );
    fill(el, panel, h('div', { class: 'run-count muted' }), h('div', { class: 'run-list' }));
  }
  const values = (/** @type {string} */ field) => [...new Set(runs.map((r) => r[field] ?? '—'))].sort();
  const choices = { algorithm: values('algorithm'), model: values('model'), status: ['live', 'closed', 'ended without close', 'unknown'] };
  for (const [field, list] of Object.entries(choices)) {
    const sel = /** @type {HTMLSelectElement} */ (panel.querySelector(`select[data-filter="${field}"]`));
    const want = ['', ...list];
    if ([...sel.options].map((o) => o.value).join('\n') !== want.join('\n')) {
      fill(sel, want.map((v) => h('option', { value: v, selected: f[field] === v }, v === '' ? `${field}: any` : v)));
    }
  }
  const shown = runs.filter((r) => matches(r, f));
  document.body.setAttribute('data-runs', String(runs.length));
  document.body.setAttribute('data-shown-runs', String(shown.length));
  fill(/** @type {HTMLElement} */ (el.querySelector('.run-count')), `${shown.length} of ${runs.length} runs`, state.notSearched ? ` · ${state.notSearched} ${state.notSearched === 1 ? 'folder' : 'folders'} not searched` : '');
  fill(
    /** @type {HTMLElement} */ (el.querySelector('.run-list')),
    shown.length === 0 ? h('div', { class: 'empty' }, runs.length ? 'No run matches the filters.' : 'No runs under the served folders yet: they appear here as they start.') : null,
    shown.map((r) => runRow(r, state.selected.includes(r.key), on.toggle)),
  );
}

/** @param {any} r @param {any} f */
function matches(r, f) {
  const text = `${r.id} ${r.path}`.toLowerCase();
  if (f.name && !text.includes(f.name.toLowerCase())) return false;
  if (f.algorithm && (r.algorithm ?? '—') !== f.algorithm) return false;
  if (f.model && (r.model ?? '—') !== f.model) return false;
  if (f.status && r.status.badge !== f.status) return false;
  if (f.finding && r.findings.critical + r.findings.warn === 0) return false;
  return true;
}

/** @param {any} r @param {boolean} checked @param {(key: string) => void} toggle */
function runRow(r, checked, toggle) {
  const chips = ['critical', 'warn', 'info'].filter((s) => r.findings[s] > 0).map((s) => h('span', { class: `chip ${s}`, title: `${r.findings[s]} ${s}` }, `${r.findings[s]} ${s}`));
  return h(
    'div',
    { class: 'run', 'data-run': r.key, 'data-status': r.status.badge },
    h('input', { type: 'checkbox', checked, 'aria-label': `chart ${r.id}`, on: { change: () => toggle(r.key) } }),
    h(
      'div',
      null,
      h('div', { class: 'name', title: r.path }, r.id),
      h('div', { class: 'meta' }, r.path),
      h(
        'div',
        { class: 'meta' },
        h('span', { class: `badge ${BADGE_CLASS[/** @type {keyof typeof BADGE_CLASS} */ (r.status.badge)] ?? ''}`, title: r.status.detail }, r.status.badge),
        `${r.algorithm}${r.model ? ` · ${r.model}` : ''} · ${r.rows} steps${r.last_step !== null ? ` (last ${r.last_step})` : ''} · ${ago(r.last_write)}`,
      ),
      chips.length ? h('div', null, chips) : null,
      r.diagnosis === 'pending' ? h('div', { class: 'muted' }, 'diagnosing…') : null,
      r.error ? h('div', { class: 'err' }, r.error) : null,
    ),
  );
}
