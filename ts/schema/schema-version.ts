/** The newest recording format this build reads and writes (docs/format.md#schema-versioning). */
export const SCHEMA_VERSION = 1;
