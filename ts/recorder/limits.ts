/** Bounds that keep one pathological record from hurting the run. */

/** Longest list field (kl_positional); matches MAX_LIST_LEN in the Rust encoding. */
export const MAX_LIST_LEN = 65_536;
/** Largest encoded record, in f64 slots. */
export const MAX_SLOTS = 1 << 20;
/** How much of an offending value a bad_record event quotes. */
export const VALUE_PREVIEW_CHARS = 120;
