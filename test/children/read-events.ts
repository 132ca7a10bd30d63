/**
 * Child for test/events-stream.test.ts: reads a run's events in a fresh process, so the
 * parent can see this read's peak memory alone.
 *
 *   node --import tsx test/children/read-events.ts <runDir> <kind>
 *
 * Prints one JSON line: the events of <kind>, all events streamed, skipped lines, peak RSS.
 */
import { RunReader } from '../../ts/index.js';

const [runDir, kind] = process.argv.slice(2);
const reader = RunReader.open(runDir);
const picked = reader.eventsWithDiagnostics({ kinds: [kind] });
const diagnostics = { skippedLines: 0 };
let streamed = 0;
for (const _ of reader.streamEvents({}, diagnostics)) streamed++;
console.log(JSON.stringify({
  picked: picked.events.map((e) => e.step),
  pickedSkipped: picked.skippedLines,
  streamed,
  streamSkipped: diagnostics.skippedLines,
  maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
}));
