import { VALUE_PREVIEW_CHARS } from './limits.js';

/**
 * A short, never-throwing description of an offending value for a bad_record event:
 * its type and a bounded preview (a megabyte string must not become a megabyte event).
 */
export function describeValue(value: unknown): { type: string; preview: string } {
  let type: string = typeof value;
  let preview: string;
  try {
    // inside the try: Array.isArray throws on a revoked Proxy
    if (value === null) type = 'null';
    else if (Array.isArray(value)) type = 'array';
    if (typeof value === 'string') {
      preview = value.length > VALUE_PREVIEW_CHARS
        ? `${JSON.stringify(value.slice(0, VALUE_PREVIEW_CHARS))}… (${value.length} chars)`
        : JSON.stringify(value);
    } else if (typeof value === 'bigint') {
      preview = `${value}n`;
    } else if (typeof value === 'symbol' || typeof value === 'function') {
      preview = String(value.toString()).slice(0, VALUE_PREVIEW_CHARS);
    } else if (typeof value === 'object' && value !== null) {
      const keys = Object.keys(value);
      preview = Array.isArray(value)
        ? `array of length ${value.length}`
        : `object with keys ${keys.slice(0, 8).join(', ')}${keys.length > 8 ? ', …' : ''}`;
    } else {
      preview = String(value);
    }
  } catch {
    preview = '<unprintable>';
  }
  if (preview.length > VALUE_PREVIEW_CHARS + 40) preview = `${preview.slice(0, VALUE_PREVIEW_CHARS)}…`;
  return { type, preview };
}

/** A bounded, never-throwing text for anything thrown (getters may throw non-Errors). */
export function describeThrown(error: unknown): string {
  let text: string;
  try {
    const message = error instanceof Error ? error.message : undefined;
    text = typeof message === 'string' ? message : describeValue(error).preview;
  } catch {
    text = '<unprintable thrown value>';
  }
  return clip(text, VALUE_PREVIEW_CHARS * 2);
}

/** Cuts `text` to `max` characters, saying how long it was. */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}
