import { readFileSync } from 'node:fs';

/** package.json's version: one level above both ts/ and dist/ ('unknown' when bundled without it). */
function readVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export const VERSION: string = readVersion();
