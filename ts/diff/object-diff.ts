/** One difference between two JSON-like objects, at a dotted path. */
export interface ObjectChange {
  path: string;
  kind: 'added' | 'removed' | 'changed';
  a?: unknown;
  b?: unknown;
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}

/**
 * The keys added in `b`, removed from `a` and changed between them, recursing into nested
 * objects (arrays and other values compare whole, by their JSON), in sorted key order.
 */
export function diffObjects(a: unknown, b: unknown, path = ''): ObjectChange[] {
  if (isPlainObject(a) && isPlainObject(b)) {
    const out: ObjectChange[] = [];
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const p = path ? `${path}.${key}` : key;
      if (!(key in b)) out.push({ path: p, kind: 'removed', a: a[key] });
      else if (!(key in a)) out.push({ path: p, kind: 'added', b: b[key] });
      else out.push(...diffObjects(a[key], b[key], p));
    }
    return out;
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [{ path, kind: 'changed', a, b }];
}
