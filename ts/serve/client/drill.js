// @ts-check
// The drawer: a finding (message, remedy, evidence, its evidence samples), a sample (full
// prompt and completion, its rollout's span tree), a span (its tree and the Harbor trial
// captured for its rollout: outcome, rewards, timings, turns and tool calls).
import { getJson, runPath } from './api.js';
import { fill, h } from './dom.js';
import { num } from './format.js';

/** Span attributes shown on a tree node, in this order (the MCP span tree shows the same). */
const WORDS = ['message', 'role', 'tool', 'arguments', 'result', 'output', 'content', 'observation'];

export class Drawer {
  /** @param {HTMLElement} el */
  constructor(el) {
    this.el = el;
    /** Bumped by each load and by close: an answer to an older request is dropped, not shown over a newer view. */
    this.asked = 0;
  }

  close() {
    this.asked++;
    this.el.hidden = true;
    fill(this.el);
    this.el.removeAttribute('data-view');
  }

  /** @param {string} view @param {...any} children */
  show(view, ...children) {
    this.el.hidden = false;
    this.el.setAttribute('data-view', view);
    fill(this.el, h('button', { class: 'close', 'aria-label': 'close', on: { click: () => this.close() } }, '✕ close'), ...children);
    this.el.scrollTop = 0;
  }

  /** @param {string} view @param {() => Promise<any[]>} load */
  async load(view, load) {
    const asked = ++this.asked;
    this.show(view, h('div', { class: 'muted' }, 'loading…'));
    /** @type {any[]} */
    let children;
    try {
      children = await load();
    } catch (e) {
      children = [h('div', { class: 'err' }, String(/** @type {Error} */ (e).message ?? e))];
    }
    if (asked === this.asked) this.show(view, ...children);
  }

  /** @param {string} run @param {string} code */
  finding(run, code) {
    return this.load('finding', async () => {
      const d = await getJson(`${runPath(run)}/findings/${encodeURIComponent(code)}`);
      const f = d.finding;
      return [
        h('h2', null, h('span', { class: `chip ${f.severity}` }, f.severity), ` ${f.code}`),
        h('div', { class: 'muted' }, `steps ${f.onset_step}–${f.last_step} · confidence ${num(f.confidence)}${f.root_cause ? ` · a consequence of ${f.root_cause}` : ''}`),
        h('p', { class: 'message' }, f.message),
        h('h3', null, 'Remedy'),
        h('p', { class: 'remedy' }, f.remedy),
        h('h3', null, 'Evidence'),
        h('table', { class: 'kv' }, Object.entries(f.evidence).map(([k, v]) => h('tr', null, h('td', null, k), h('td', null, num(v))))),
        f.levels ? h('p', { class: 'muted' }, `${f.levels.column}: ${num(f.levels.start)} → ${num(f.levels.end)} (×${num(f.levels.ratio)})`) : null,
        d.related.length ? h('p', { class: 'muted' }, `Its consequences: ${d.related.join(', ')}`) : null,
        h('h3', null, `Evidence samples (${d.samples.length})`),
        d.samples.length === 0 ? h('p', { class: 'muted' }, 'No sample of the run shows it (or the run logs no samples).') : null,
        d.samples.map((/** @type {any} */ s) => {
          const why = f.samples.find((/** @type {any} */ e) => e.step === s.step && e.sample_id === s.sample_id)?.why;
          return this.sampleCard(run, s, why);
        }),
      ];
    });
  }

  /** A sample in a card: its figures, its texts, a link to it in full. @param {string} run @param {any} s @param {string} [why] */
  sampleCard(run, s, why) {
    return h(
      'div',
      { class: 'card sample', 'data-sample': s.sample_id },
      h(
        'div',
        null,
        h('button', { class: 'link open-sample', on: { click: () => this.sample(run, s.step, s.sample_id, s.rank ?? 0) } }, `step ${s.step} · sample ${s.sample_id}`),
        ` · ${s.capture_reason ?? ''} · reward ${num(s.reward_total)}${s.truncated ? ' · truncated' : ''}`,
      ),
      why ? h('div', { class: 'muted' }, why) : null,
      h('pre', { class: 'text prompt' }, s.prompt_text ?? ''),
      h('pre', { class: 'text completion' }, s.completion_text ?? ''),
    );
  }

  /** @param {string} run @param {number} step @param {string} id @param {number} rank */
  sample(run, step, id, rank) {
    return this.load('sample', async () => {
      const d = await getJson(`${runPath(run)}/sample?step=${step}&id=${encodeURIComponent(id)}&rank=${rank}`);
      const s = d.sample;
      const figures = Object.entries(s).filter(([k, v]) => !['prompt_text', 'completion_text', 'reward_components'].includes(k) && (typeof v !== 'object' || v === null));
      return [
        h('h2', null, `Sample ${s.sample_id} at step ${s.step}`),
        h('table', { class: 'kv' }, figures.map(([k, v]) => h('tr', null, h('td', null, k), h('td', null, typeof v === 'number' ? num(v) : String(v))))),
        s.reward_components ? h('p', { class: 'muted' }, `reward components: ${Object.entries(s.reward_components).map(([k, v]) => `${k} ${num(v)}`).join(', ')}`) : null,
        h('h3', null, 'Prompt'),
        h('pre', { class: 'text prompt' }, s.prompt_text ?? '(none logged)'),
        h('h3', null, 'Completion'),
        h('pre', { class: 'text completion' }, s.completion_text ?? '(none logged)'),
        d.trial ? this.trialBlock(d.trial) : null,
        h('h3', null, 'Rollout span tree'),
        d.tree ? this.tree(run, d.tree) : h('p', { class: 'muted' }, 'The sample names no span (its rollout was not traced).'),
      ];
    });
  }

  /** @param {string} run @param {string} spanId */
  span(run, spanId) {
    return this.load('span', async () => {
      const d = await getJson(`${runPath(run)}/spans/${encodeURIComponent(spanId)}`);
      const s = d.span;
      return [
        h('h2', null, `${s.kind} ${s.name}`),
        h('div', { class: 'muted' }, `status ${s.status}${s.error ? `: ${s.error}` : ''} · step ${s.step ?? '—'} · ${s.duration_s === null ? 'open' : `${num(s.duration_s)} s`}`),
        h('pre', { class: 'text attributes' }, JSON.stringify(s.attributes, null, 2)),
        d.trial ? this.trialBlock(d.trial) : h('p', { class: 'muted' }, 'No Harbor trial was captured for this rollout.'),
        h('h3', null, 'Turns and tool calls'),
        d.tree ? this.tree(run, d.tree) : null,
      ];
    });
  }

  /** @param {any} t */
  trialBlock(t) {
    return h(
      'div',
      { class: 'card trial' },
      h('h3', null, `Trial ${t.name}`),
      h('table', { class: 'kv' },
        [['outcome', t.outcome], ['agent', t.agent], ['model', t.model], ['step', t.step], ['sample', t.sample_id], ['started', t.started_at], ['finished', t.finished_at]]
          .filter(([, v]) => v !== null && v !== undefined)
          .map(([k, v]) => h('tr', null, h('td', null, k), h('td', null, String(v)))),
        Object.entries(t.rewards ?? {}).map(([k, v]) => h('tr', null, h('td', null, `reward ${k}`), h('td', null, num(v)))),
        Object.entries(t.timings ?? {}).map(([k, v]) => h('tr', null, h('td', null, `timing ${k}`), h('td', null, `${/** @type {any} */ (v).started_at ?? '?'} → ${/** @type {any} */ (v).finished_at ?? '?'}`))),
      ),
      t.trajectories.length ? h('div', { class: 'muted' }, t.trajectories.map((/** @type {any} */ x) => `${x.path}: ${x.turns} turns, ${x.tool_calls} tool calls`).join(' · ')) : null,
    );
  }

  /** @param {string} run @param {any} tree */
  tree(run, tree) {
    /** @param {any} n @returns {HTMLElement} */
    const node = (n) => {
      const s = n.span;
      const words = WORDS.filter((w) => s.attributes && s.attributes[w] !== undefined).map((w) => {
        const v = s.attributes[w];
        const text = typeof v === 'string' ? v : JSON.stringify(v);
        return h('pre', { class: 'text attr', 'data-attr': w }, `${w}: ${text.length > 2000 ? `${text.slice(0, 2000)}… (${text.length} characters)` : text}`);
      });
      return h(
        'li',
        { class: n.here ? 'here' : undefined, 'data-span': s.span_id, 'data-kind': s.kind },
        h('button', { class: 'link span-link', on: { click: () => this.span(run, s.span_id) } }, `${s.kind} ${s.name}`),
        h('span', { class: 'muted' }, ` ${s.status}${s.duration_s !== null ? ` · ${num(s.duration_s)} s` : ''}${s.error ? ` · ${s.error}` : ''}`),
        words,
        n.children.length || n.more ? h('ul', { class: 'tree' }, n.children.map(node), n.more ? h('li', { class: 'muted' }, `${n.more} more`) : null) : null,
      );
    };
    return h('div', null, tree.clipped ? h('p', { class: 'muted' }, `The first ${tree.nodes} spans are shown.`) : null, h('ul', { class: 'tree span-tree' }, node(tree.root)));
  }
}
