import { z } from 'zod';

/** The newest recording format this build reads and writes. */
export const SCHEMA_VERSION = 1;

/**
 * manifest.json (docs/format.md#manifestjson). Keys match the Python package's; unknown keys
 * written by newer tools are kept (passthrough), not rejected.
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
