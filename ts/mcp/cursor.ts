/**
 * Opaque page cursors. A cursor names the tool it continues, a fingerprint of the
 * arguments of the call that returned it, and where the next page starts; it is base64url
 * JSON, so nothing about it is secret, only unguessable by accident. A cursor that was not
 * made by this server, was made by another tool, or is replayed with other arguments is
 * refused with a message saying which, never read as page one.
 */
import { createHash } from 'node:crypto';

import { z } from 'zod';

import { ToolError } from './tool-error.js';

const CURSOR_VERSION = 1;

const Position = z.record(z.string(), z.number().int().min(0));
const CursorSchema = z.strictObject({ v: z.literal(CURSOR_VERSION), tool: z.string(), args: z.string(), at: Position });

export type CursorPosition = z.infer<typeof Position>;

/** Sorted keys at every level, so equal arguments give equal text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The fingerprint of a call's arguments, the cursor itself left out. */
function fingerprint(args: Record<string, unknown>): string {
  const { cursor: _cursor, ...rest } = args;
  return createHash('sha256').update(canonical(rest)).digest('base64url').slice(0, 16);
}

export function makeCursor(tool: string, args: Record<string, unknown>, at: CursorPosition): string {
  return Buffer.from(JSON.stringify({ v: CURSOR_VERSION, tool, args: fingerprint(args), at }), 'utf8').toString('base64url');
}

/**
 * The position `cursor` continues from, for a call of `tool` with `args`; `{}` when the
 * call has no cursor (the first page). Throws ToolError naming the cursor and what is wrong.
 */
export function readCursor(tool: string, args: Record<string, unknown> & { cursor?: string }, keys: readonly string[]): CursorPosition {
  const text = args.cursor;
  if (text === undefined) return {};
  const shown = JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
  const refuse = (why: string): never => {
    throw new ToolError(`invalid cursor ${shown}: ${why}`);
  };
  let decoded: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(text)) refuse('not a cursor this server returned (pass next_cursor back unchanged)');
    decoded = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch (error) {
    if (error instanceof ToolError) throw error;
    refuse('not a cursor this server returned (pass next_cursor back unchanged)');
  }
  const parsed = CursorSchema.safeParse(decoded);
  if (!parsed.success) refuse('not a cursor this server returned (pass next_cursor back unchanged)');
  const c = parsed.data!;
  if (c.tool !== tool) refuse(`it continues ${c.tool}, not ${tool}`);
  if (c.args !== fingerprint(args)) refuse(`it was returned for other arguments: call ${tool} again with the same arguments as the call that returned it`);
  const missing = keys.find((k) => c.at[k] === undefined);
  if (missing !== undefined) refuse(`it has no ${missing} position`);
  return c.at;
}
