/**
 * manifest.json checked without loading zod: a hand-written check vouches for a manifest
 * RunManifestSchema accepts (every recorder writes one), and yields what the schema would;
 * anything it cannot vouch for goes to the schema itself, loaded then, which decides and
 * words the error. The schema stays the one definition; test/schema-checks.test.ts holds
 * the check to it (never accepting what the schema rejects, and the same output).
 */
import { copyUnknownKeys, isJsonObject, isSafeInt, recordOrDefault } from './json-values.js';
import type * as ManifestModule from './manifest.js';
import type { RunManifest } from './manifest.js';
import { loadOnDemand } from './on-demand.js';

/** RunManifestSchema's keys, in its order (the test compares them with the schema's shape). */
export const MANIFEST_KEYS = ['schema_version', 'run_id', 'created_at', 'algorithm', 'model_name', 'world_size', 'trainer_config', 'environment', 'notes', 'extra'] as const;

const KNOWN: ReadonlySet<string> = new Set(MANIFEST_KEYS);

const isStringOrNull = (v: unknown) => typeof v === 'string' || v === null;

/**
 * `value` as RunManifestSchema parses it, or null when this check does not vouch for it
 * (then only the schema can say whether it is valid).
 */
export function acceptRunManifest(value: unknown): RunManifest | null {
  if (!isJsonObject(value)) return null;
  const m = value;
  const { schema_version: version, run_id: runId, created_at: createdAt, algorithm } = m;
  if (!isSafeInt(version) || version < 1) return null;
  if (typeof runId !== 'string' || typeof createdAt !== 'string' || typeof algorithm !== 'string') return null;
  // optional, nullable: a key that is there holds a string or null (undefined goes to zod)
  if ('model_name' in m && !isStringOrNull(m.model_name)) return null;
  if ('notes' in m && !isStringOrNull(m.notes)) return null;
  const worldSize = m.world_size === undefined ? 1 : m.world_size;
  if (!isSafeInt(worldSize) || worldSize < 1) return null;
  const trainerConfig = recordOrDefault(m.trainer_config);
  const environment = recordOrDefault(m.environment);
  const extra = recordOrDefault(m.extra);
  if (trainerConfig === undefined || environment === undefined || extra === undefined) return null;
  // built in the schema's key order, then the unknown keys: what zod's looseObject yields
  const out: Record<string, unknown> = { schema_version: version, run_id: runId, created_at: createdAt, algorithm };
  if ('model_name' in m) out.model_name = m.model_name;
  out.world_size = worldSize;
  out.trainer_config = trainerConfig;
  out.environment = environment;
  if ('notes' in m) out.notes = m.notes;
  out.extra = extra;
  copyUnknownKeys(m, out, KNOWN);
  return out as RunManifest;
}

export type ManifestParse = { ok: true; manifest: RunManifest } | { ok: false; field: string; message: string };

/**
 * `value` checked as RunManifestSchema would: the manifest, or the first problem (the
 * field's dotted path, '' for the whole manifest, and zod's message).
 */
export function parseRunManifest(value: unknown): ManifestParse {
  const manifest = acceptRunManifest(value);
  if (manifest !== null) return { ok: true, manifest };
  const { RunManifestSchema } = loadOnDemand<typeof ManifestModule>(import.meta.url, './manifest.js');
  const parsed = RunManifestSchema.safeParse(value);
  if (parsed.success) return { ok: true, manifest: parsed.data };
  const issue = parsed.error.issues[0];
  // String: a symbol key (a migration's object, never JSON) must not break the message
  return { ok: false, field: issue.path.map(String).join('.'), message: issue.message };
}
