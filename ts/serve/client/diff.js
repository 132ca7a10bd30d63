// @ts-check
// Two runs compared, as `probe diff` compares them: the metric that diverged first, each
// metric's final, best and area, configuration and environment changes, findings only in one.
import { getJson } from './api.js';
import { fill, h } from './dom.js';
import { num } from './format.js';

/**
 * Where B left A: the step, the difference B − A there, and that difference in σ, the noise
 * of the difference before it (as the report labels it; `sigma` is that noise, not a count).
 * @param {{ step: number, difference: number, sigma: number }} v
 */
export function divergence(v) {
  const sigmas = typeof v.sigma === 'number' && v.sigma > 0 && typeof v.difference === 'number' ? `, ${(v.difference / v.sigma).toFixed(1)} σ` : '';
  return `step ${v.step} (${typeof v.difference === 'number' && v.difference > 0 ? '+' : ''}${num(v.difference)}${sigmas})`;
}

/**
 * @param {HTMLElement} el
 * @param {any} state
 */
export function renderDiff(el, state) {
  const keys = [...state.runs.keys()];
  if (keys.length < 2) return fill(el, h('div', { class: 'empty' }, 'A diff needs two runs.'));
  const d = state.diff;
  d.a = keys.includes(d.a) ? d.a : state.selected[0] ?? keys[0];
  d.b = keys.includes(d.b) && d.b !== d.a ? d.b : state.selected.find((/** @type {string} */ k) => k !== d.a) ?? keys.find((k) => k !== d.a);
  const out = h('div', { class: 'diff-result' });
  // a slow answer for the runs picked before must not replace the answer for the runs picked now
  let asked = 0;
  const pick = (/** @type {'a'|'b'} */ side) =>
    h('label', null, `${side.toUpperCase()} `, h('select', { name: side, on: { change: (/** @type {Event} */ e) => ((d[side] = /** @type {HTMLSelectElement} */ (e.target).value), run()) } }, keys.map((k) => h('option', { value: k, selected: d[side] === k }, state.runs.get(k)?.id ?? k))));
  const run = async () => {
    const mine = ++asked;
    fill(out, h('div', { class: 'muted' }, 'comparing…'));
    try {
      const r = await getJson(`/api/diff?a=${d.a}&b=${d.b}`);
      if (mine !== asked) return;
      const changes = (/** @type {string} */ title, /** @type {any[]} */ list) =>
        list.length ? [h('h3', null, title), h('table', { class: 'list' }, h('tr', null, h('th', null, 'path'), h('th', null, 'A'), h('th', null, 'B')), list.map((c) => h('tr', null, h('td', null, c.path), h('td', null, JSON.stringify(c.a) ?? '—'), h('td', null, JSON.stringify(c.b) ?? '—'))))] : [];
      fill(
        out,
        h('p', { class: 'lead' }, r.lead ? `${r.lead.metric} diverged first, at step ${r.lead.step}.` : 'No metric diverged on the common steps.'),
        h('p', { class: 'muted' }, `steps: A ${r.steps.a}, B ${r.steps.b}, common ${r.steps.common}`),
        r.warnings.map((/** @type {string} */ w) => h('p', { class: 'err' }, w)),
        changes('Run', r.run),
        changes('Trainer config', r.trainer_config),
        changes('Environment', r.environment),
        h('h3', null, 'Metrics'),
        h(
          'table',
          { class: 'list metrics' },
          h('tr', null, ['metric', 'final A', 'final B', 'best A', 'best B', 'diverges at'].map((t) => h('th', null, t))),
          r.metrics.map((/** @type {any} */ m) => h('tr', { 'data-metric': m.metric }, h('td', null, m.metric), h('td', null, num(m.final.a)), h('td', null, num(m.final.b)), h('td', null, num(m.best?.a)), h('td', null, num(m.best?.b)), h('td', null, m.divergence ? divergence(m.divergence) : '—'))),
        ),
        r.only_in_a.length || r.only_in_b.length ? h('p', { class: 'muted' }, `only in A: ${r.only_in_a.join(', ') || '—'} · only in B: ${r.only_in_b.join(', ') || '—'}`) : null,
        h('h3', null, 'Findings in one run only'),
        h('p', null, `A: ${r.findings.only_in_a.map((/** @type {any} */ f) => f.code).join(', ') || '—'}`),
        h('p', null, `B: ${r.findings.only_in_b.map((/** @type {any} */ f) => f.code).join(', ') || '—'}`),
      );
    } catch (e) {
      if (mine !== asked) return;
      fill(out, h('div', { class: 'err' }, String(/** @type {Error} */ (e).message)));
    }
  };
  fill(el, h('div', { class: 'controls' }, pick('a'), pick('b')), out);
  run();
}
