import { RunEventSchema } from '../schema/event.js';
import type { RunEvent } from '../schema/event.js';
import { readRegularFile } from './regular-file.js';

export interface EventsRead {
  events: RunEvent[];
  /** Lines that were not a valid event (a torn last line after a crash, garbage). */
  skippedLines: number;
}

/**
 * Reads events.jsonl. A line that does not parse as an event — typically the torn last
 * line of a crashed writer — is skipped and counted, never fatal. A missing file has no
 * events; one that is not a regular file (a FIFO, a directory…) throws RLPROBE_IO naming it.
 */
export function readEventsFile(file: string, migrate?: (raw: Record<string, unknown>) => Record<string, unknown>): EventsRead {
  const text = readRegularFile(file, 'RLPROBE_IO', 'move it out of the run directory to read the rest (the run has no readable events then)');
  if (text === null) return { events: [], skippedLines: 0 };
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
