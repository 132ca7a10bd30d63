import { z } from 'zod';

// its own module, so the reader and the recorder can name it without loading zod
export { SCHEMA_VERSION } from './schema-version.js';

/**
 * manifest.json (docs/format.md#manifestjson). Keys match the Python package's; unknown keys
 * written by newer tools are kept (passthrough), not rejected. The reader checks manifests
 * with manifest-check.ts first (no zod) and comes here for what that check does not vouch
 * for: a change here is a change there (test/schema-checks.test.ts fails until it is made).
 */
export const RunManifestSchema = z.looseObject({
  schema_version: z.number().int().min(1),
  run_id: z.string(),
  created_at: z.string(),
  algorithm: z.string(),
  model_name: z.string().nullable().optional(),
  world_size: z.number().int().min(1).default(1),
  trainer_config: z.record(z.string(), z.unknown()).default({}),
  environment: z.record(z.string(), z.unknown()).default({}),
  notes: z.string().nullable().optional(),
  extra: z.record(z.string(), z.unknown()).default({}),
});

export type RunManifest = z.infer<typeof RunManifestSchema>;
