/** Small HTML builders the report's sections share: escaping, numbers, tables, samples. */
import type { StoredSampleRecord } from '../schema/sample-record.js';
import type { SpanTreeNode } from '../schema/span-record.js';
import { fileHref } from './file-links.js';
import type { LinkBase } from './file-links.js';
import type { ReportTrial } from './trial-links.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as HTML (element content or a quoted attribute). */
export function esc(v: unknown): string {
  return String(v).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** A number as a person reads it: 4 significant digits, exponent when tiny or huge. */
export function num(x: number | null | undefined): string {
  if (x === null || x === undefined) return '—';
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e9) return String(x);
  const a = Math.abs(x);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? x.toExponential(3).replace(/\.?0+e/, 'e') : String(Number(x.toPrecision(4)));
}

/** A `<table>` from a header and rows of cell HTML (already escaped). */
export function table(header: string[], rows: string[][], cls = ''): string {
  const head = `<tr>${header.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>`;
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('');
  return `<table${cls ? ` class="${cls}"` : ''}><thead>${head}</thead><tbody>${body}</tbody></table>`;
}

/** A JSON-like value as an indented, escaped block (or a note when empty). */
export function jsonBlock(v: unknown, empty: string): string {
  const isEmpty = v === null || v === undefined || (typeof v === 'object' && Object.keys(v as object).length === 0);
  return isEmpty ? `<p class="muted">${esc(empty)}</p>` : `<pre class="json">${esc(JSON.stringify(v, null, 2))}</pre>`;
}

function chip(label: string, value: string, cls = ''): string {
  return `<span class="chip${cls ? ` ${cls}` : ''}"><b>${esc(label)}</b> ${value}</span>`;
}

/**
 * A captured trial as one line: name linked to its capture, outcome, rewards, trajectory
 * size. Links are relative to `links` (the report's directory).
 */
export function trialLine(t: ReportTrial, links: LinkBase): string {
  const rewards = t.rewards ? Object.entries(t.rewards).map(([k, v]) => `${k} ${v === null ? 'NaN' : num(v)}`).join(', ') : 'no reward';
  const traj = t.trajectory ? ` · <a href="${esc(fileHref(t.trajectory, links))}">trajectory</a> (${esc(t.turns)} turns, ${esc(t.tool_calls)} tool calls)` : '';
  const ids = [t.sample_id ? `sample ${t.sample_id}` : '', t.group_id ? `group ${t.group_id}` : ''].filter(Boolean).join(', ');
  return (
    `<div class="trial"><b>trial</b> <a href="${esc(fileHref(t.dir, links))}">${esc(t.name)}</a> <span class="${t.outcome.startsWith('failed') ? 'bad' : 'muted'}">${esc(t.outcome)}</span>` +
    ` · ${esc(rewards)}${traj}${ids ? ` · <span class="muted">${esc(ids)}</span>` : ''} · <span class="muted">probe trial show … ${esc(t.capture_key)}</span></div>`
  );
}

export interface SampleCardOptions {
  /** Why the doctor cites it (an evidence sample). */
  why?: string;
  /** The rollout tree it was logged in. */
  tree?: SpanTreeNode;
  /** The trial captured for it, and where its links are relative to. */
  trial?: ReportTrial;
  links: LinkBase;
  /** Show the prompt and completion without a click (evidence, a section's first card). */
  open?: boolean;
}

/**
 * One sample: its figures as chips, the full prompt and completion behind a disclosure
 * (never cut: this is where a person reads what the policy actually wrote).
 */
export function sampleCard(s: StoredSampleRecord, o: SampleCardOptions): string {
  const { why, tree, trial } = o;
  const chips = [
    chip('step', esc(s.step)),
    chip('id', esc(s.sample_id)),
    s.capture_reason ? chip('reason', esc(s.capture_reason), `reason-${esc(s.capture_reason)}`) : '',
    chip('reward', esc(num(s.reward_total))),
    s.advantage !== undefined ? chip('adv', esc(num(s.advantage))) : '',
    s.completion_len !== undefined ? chip('len', esc(num(s.completion_len))) : '',
    s.truncated !== undefined ? chip('truncated', s.truncated ? 'yes' : 'no', s.truncated ? 'bad' : '') : '',
    s.group_id !== undefined ? chip('group', esc(s.group_id)) : '',
    s.rank ? chip('rank', esc(s.rank)) : '',
    s.kl_contribution !== undefined ? chip('kl', esc(num(s.kl_contribution))) : '',
    s.logprob_mean !== undefined ? chip('logprob', esc(num(s.logprob_mean))) : '',
  ].join('');
  const components = Object.entries(s.reward_components ?? {});
  const extras = Object.entries(s.extra ?? {});
  const figures = [...components.map(([k, v]) => chip(k, esc(num(v)), 'component')), ...extras.map(([k, v]) => chip(k, esc(num(v)), 'extra'))].join('');
  const text = (label: string, t: string | undefined) =>
    t === undefined ? '' : `<div class="text-label">${esc(label)} <span class="muted">(${t.length.toLocaleString('en-US')} chars)</span></div><pre class="text">${esc(t)}</pre>`;
  const hasText = s.prompt_text !== undefined || s.completion_text !== undefined;
  return (
    `<div class="sample">${why ? `<div class="why">${esc(why)}</div>` : ''}<div class="chips">${chips}</div>` +
    (figures ? `<div class="chips">${figures}</div>` : '') +
    (hasText ? `<details class="texts"${o.open ? ' open' : ''}><summary>prompt and completion</summary>${text('prompt', s.prompt_text)}${text('completion', s.completion_text)}</details>` : '') +
    (trial ? trialLine(trial, o.links) : '') +
    (tree ? spanTreeBlock(tree, s.span_id) : s.span_id ? `<div class="muted">span ${esc(s.span_id)} (not recorded)</div>` : '') +
    `</div>`
  );
}

/** Nodes drawn per tree; a longer trajectory says how many more it has. */
const MAX_TREE_NODES = 300;

function seconds(d: number | null): string {
  if (d === null) return 'open';
  return d < 1 ? `${num(d * 1000)} ms` : `${num(d)} s`;
}

/**
 * A sample's rollout tree (rollout → turns → tool calls), its own span marked, behind a
 * disclosure: kind, name, duration, status and attributes of each span.
 */
export function spanTreeBlock(root: SpanTreeNode, here: string | undefined): string {
  let drawn = 0;
  let total = 0;
  const count = (n: SpanTreeNode): void => {
    total++;
    n.children.forEach(count);
  };
  count(root);
  const item = (n: SpanTreeNode): string => {
    if (drawn >= MAX_TREE_NODES) return '';
    drawn++;
    const s = n.span;
    const attrs = Object.entries(s.attributes)
      .slice(0, 6)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    const status = s.status === 'ok' ? '' : ` <span class="${s.status === 'error' ? 'bad' : 'muted'}">${esc(s.status.toUpperCase())}${s.error ? ` ${esc(s.error)}` : ''}</span>`;
    const children = n.children.map(item).join('');
    return (
      `<li${s.span_id === here ? ' class="here"' : ''}><b>${esc(s.kind)}</b> ${esc(s.name)} <span class="muted">${esc(seconds(s.duration_s))}${s.step !== null ? ` · step ${esc(s.step)}` : ''}</span>${status}` +
      (attrs ? ` <span class="attrs">${esc(attrs.length > 300 ? `${attrs.slice(0, 300)}…` : attrs)}</span>` : '') +
      (children ? `<ul>${children}</ul>` : '') +
      `</li>`
    );
  };
  const body = item(root);
  const more = total > drawn ? `<p class="muted">… ${total - drawn} more spans (probe span list --root ${esc(root.span.span_id)} --tree)</p>` : '';
  return `<details class="span-tree"><summary>${esc(root.span.kind)} tree (${total} span${total === 1 ? '' : 's'})</summary><ul>${body}</ul>${more}</details>`;
}
