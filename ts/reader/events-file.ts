import { readFileSync } from 'node:fs';

import { RunEventSchema } from '../schema/event.js';
import type { RunEvent } from '../schema/event.js';

export interface EventsRead {
  events: RunEvent[];
  /** Lines that were not a valid event (a torn last line after a crash, garbage). */
  skippedLines: number;
}

/**
 * Reads events.jsonl. A line that does not parse as an event — typically the torn last
 * line of a crashed writer — is skipped and counted, never fatal.
 */
export function readEventsFile(file: string, migrate?: (raw: Record<string, unknown>) => Record<string, unknown>): EventsRead {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { events: [], skippedLines: 0 };
    throw error;
  }
  const events: RunEvent[] = [];
  let skippedLines = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      skippedLines++;
      continue;
    }
    if (migrate && parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
      parsed = migrate(parsed as Record<string, unknown>);
    }
    const ok = RunEventSchema.safeParse(parsed);
    if (ok.success) events.push(ok.data);
    else skippedLines++;
  }
  return { events, skippedLines };
}
