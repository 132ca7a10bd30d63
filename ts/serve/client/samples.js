// @ts-check
// The samples browser: `probe samples`' filters as a form over one run, a page at a time.
import { getJson, runPath } from './api.js';
import { fill, h } from './dom.js';

const FIELDS = [
  ['step', 'step', 'N'],
  ['steps', 'steps', 'FROM..TO'],
  ['reason', 'reason', 'top_k, bottom_k, random…'],
  ['group', 'group', 'ID'],
  ['rank', 'rank', 'N'],
  ['reward', 'reward', 'MIN..MAX'],
  ['text', 'text', 'contains…'],
  ['around_finding', 'around finding', 'CODE'],
];

/**
 * @param {HTMLElement} el
 * @param {any} state
 * @param {import('./drill.js').Drawer} drawer
 */
export function renderSamples(el, state, drawer) {
  const runs = state.selected.length ? state.selected : [...state.runs.keys()];
  if (runs.length === 0) return fill(el, h('div', { class: 'empty' }, 'No run to browse.'));
  const q = state.sampleQuery;
  q.run = runs.includes(q.run) ? q.run : runs[0];
  const results = h('div', { class: 'sample-results' });
  // a slow answer to an older search must not replace a newer one's
  let asked = 0;
  const search = async (/** @type {number} */ offset) => {
    const mine = ++asked;
    const params = new URLSearchParams();
    for (const [name] of FIELDS) if (q[name]) params.set(name, q[name]);
    if (q.truncated) params.set('truncated', q.truncated);
    params.set('offset', String(offset));
    fill(results, h('div', { class: 'muted' }, 'loading…'));
    try {
      const d = await getJson(`${runPath(q.run)}/samples?${params}`);
      if (mine !== asked) return;
      fill(
        results,
        h('div', { class: 'muted', 'data-count': d.samples.length }, `${d.samples.length} samples from #${offset + 1}${d.more ? ' (more after these)' : ''}`),
        d.samples.map((/** @type {any} */ s) => drawer.sampleCard(q.run, s)),
        d.more ? h('button', { on: { click: () => search(offset + d.samples.length) } }, 'next page') : null,
      );
    } catch (e) {
      if (mine !== asked) return;
      fill(results, h('div', { class: 'err' }, String(/** @type {Error} */ (e).message)));
    }
  };
  const input = (/** @type {string} */ name, /** @type {string} */ label, /** @type {string} */ hint) =>
    h('label', null, label, h('input', { name, placeholder: hint, value: q[name] ?? '', on: { input: (/** @type {Event} */ e) => (q[name] = /** @type {HTMLInputElement} */ (e.target).value) } }));
  const form = h(
    'form',
    { class: 'samples', on: { submit: (/** @type {Event} */ e) => (e.preventDefault(), search(0)) } },
    h('label', null, 'run', h('select', { name: 'run', on: { change: (/** @type {Event} */ e) => (q.run = /** @type {HTMLSelectElement} */ (e.target).value) } }, runs.map((k) => h('option', { value: k, selected: k === q.run }, state.runs.get(k)?.id ?? k)))),
    FIELDS.map(([n, l, hint]) => input(n, l, hint)),
    h('label', null, 'truncated', h('select', { name: 'truncated', on: { change: (/** @type {Event} */ e) => (q.truncated = /** @type {HTMLSelectElement} */ (e.target).value) } }, ['', 'true', 'false'].map((v) => h('option', { value: v, selected: q.truncated === v }, v || 'either')))),
    h('button', { type: 'submit' }, 'search'),
  );
  fill(el, form, results);
  search(0);
}
