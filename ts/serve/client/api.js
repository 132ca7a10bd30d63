// @ts-check
// The server's JSON API and its one event stream.

/** @param {string} path @returns {Promise<any>} */
export async function getJson(path) {
  const res = await fetch(path, { headers: { Accept: 'application/json' } });
  const body = await res.json().catch(() => ({ error: `${res.status} ${res.statusText}` }));
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${res.statusText}`);
  return body;
}

/** @param {string} key */
export const runPath = (key) => `/api/runs/${encodeURIComponent(key)}`;

/**
 * One EventSource for the page, reopened when the runs shown change.
 * @param {string[]} runs
 * @param {Record<string, (data: any) => void>} handlers
 * @param {(open: boolean) => void} onState
 * @returns {EventSource}
 */
export function openStream(runs, handlers, onState) {
  const es = new EventSource(`/api/stream?runs=${runs.map(encodeURIComponent).join(',')}`);
  for (const [event, fn] of Object.entries(handlers)) {
    es.addEventListener(event, (e) => fn(JSON.parse(/** @type {MessageEvent} */ (e).data)));
  }
  es.onopen = () => onState(true);
  es.onerror = () => onState(false);
  return es;
}
