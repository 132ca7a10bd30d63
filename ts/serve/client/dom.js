// @ts-check
// Builds elements. Text from runs goes in through text nodes and attribute values only,
// never as markup: this file is the page's one way to make elements, and it has no path
// from a string to markup anywhere in the client.

const ATTRIBUTES = new Set(['class', 'id', 'title', 'type', 'value', 'placeholder', 'for', 'name', 'role', 'min', 'max', 'step', 'colspan', 'href', 'hidden', 'disabled', 'checked', 'selected', 'multiple', 'aria-label', 'aria-selected', 'aria-expanded']);

/**
 * h('div', {class: 'x', on: {click: f}}, 'text', child…): an element. Attributes outside
 * the allowlist (and every on* attribute) are refused; `href` must be a fragment.
 * @param {string} tag
 * @param {Record<string, any> | null} [attrs]
 * @param {...any} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') {
      for (const [event, fn] of Object.entries(v)) el.addEventListener(event, fn);
    } else if (k.startsWith('data-')) {
      el.setAttribute(k, String(v));
    } else if (ATTRIBUTES.has(k)) {
      if (k === 'href' && !String(v).startsWith('#')) throw new Error(`h: href must be a fragment (got ${String(v)})`);
      if (k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden' || k === 'multiple') /** @type {any} */ (el)[k] = Boolean(v);
      else if (k === 'value') /** @type {any} */ (el).value = String(v);
      else el.setAttribute(k, String(v));
    } else {
      throw new Error(`h: attribute ${k} is not allowed`);
    }
  }
  append(el, children);
  return el;
}

/** @param {Node} el @param {any[]} children */
function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** Replaces `el`'s children. @param {Element} el @param {...any} children */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}
