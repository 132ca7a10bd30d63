/** Bounds that keep one pathological record from hurting the run. */

/** Columns a recording holds; matches MAX_COLUMNS in crates/rlprobe-core/src/schema.rs. */
export const MAX_COLUMNS = 4096;

/** Longest list field (kl_positional); matches MAX_LIST_LEN in the Rust encoding. */
export const MAX_LIST_LEN = 65_536;
/** Largest encoded record, in f64 slots. */
export const MAX_SLOTS = 1 << 20;
/** How much of an offending value a bad_record event quotes. */
export const VALUE_PREVIEW_CHARS = 120;
/** Longest `logEvent` kind, in characters. */
export const MAX_EVENT_KIND_CHARS = 256;
/** Longest `logEvent` message, in characters. */
export const MAX_EVENT_MESSAGE_CHARS = 8192;
/** Largest `logEvent` data, in characters of JSON: an event line stays a line, not a file. */
export const MAX_EVENT_DATA_CHARS = 65_536;
/**
 * Most samples one `logSamples` call may hand over: selection reads every sample's reward
 * on the training thread, so the length bounds the work (about 50 ms at the limit here).
 */
export const MAX_SAMPLES_PER_CALL = 1 << 18;
