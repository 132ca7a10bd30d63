/**
 * What a recorder counts, and what `close()` reports. The native writer keeps most counters;
 * calls refused on the JS thread before reaching it (`logEvent`, `logSamples`) are counted
 * here and added in.
 */
import type { NativeCloseReport, NativeCounters } from '../native.js';

export interface RecorderCounters {
  /** Step records handed to `logStep`. */
  logged: number;
  /** Rows in published part files. */
  written: number;
  /** Refused by a full queue (or lost to a writer failure; see recorder_error events). */
  dropped: number;
  /** Malformed records, each with a bad_record event. */
  bad: number;
  /** Accepted, not yet published. `written + dropped + bad + pending == logged`. */
  pending: number;
  eventsWritten: number;
  eventsDropped: number;
  /** `logEvent` calls refused (bad kind, options, message or data), each with a bad_record event. */
  eventsBad: number;
  /** Samples kept by selection and handed to the writer. */
  samplesLogged: number;
  samplesWritten: number;
  /** Refused by a full sample queue. */
  samplesDropped: number;
  /** Malformed samples, each with a bad_record event. */
  samplesBad: number;
  /** `samplesWritten + samplesDropped + samplesBad + samplesPending == samplesLogged`. */
  samplesPending: number;
  /**
   * `logSamples` calls refused whole (bad options, not an array, too long), each with a
   * bad_record event; their samples are in none of the sample counters.
   */
  sampleCallsBad: number;
  /**
   * Span writes handed to the writer: one per ended span, plus one per span a flush,
   * crash or close found open (readers keep each span's last write).
   */
  spansLogged: number;
  spansWritten: number;
  /** Refused by a full span queue. */
  spansDropped: number;
  spansBad: number;
  /** `spansWritten + spansDropped + spansBad + spansPending == spansLogged`. */
  spansPending: number;
  /**
   * Failed writes (a part file, event lines, the run directory removed mid-run): each one
   * also prints a rate-limited stderr line, and is written to events.jsonl as a
   * `recorder_error` once writing works again. Its rows count as `dropped`.
   */
  writeFailures: number;
}

export interface CloseSummary {
  counters: RecorderCounters;
  compaction: {
    partsMerged: number;
    rows: number;
    bytes: number;
    samplePartsMerged: number;
    sampleRows: number;
    spanPartsMerged: number;
    spanRows: number;
  } | null;
  /** The last error the writer met, if any (the recording is still readable). */
  error: string | null;
}

/** Calls refused on the JS thread, never seen by the native counters. */
export interface CallCounters {
  eventsBad: number;
  sampleCallsBad: number;
}

/** The counters of a recorder that records nothing (an inert rank). */
export function zeroCounters(): RecorderCounters {
  return {
    logged: 0, written: 0, dropped: 0, bad: 0, pending: 0, eventsWritten: 0, eventsDropped: 0, eventsBad: 0,
    samplesLogged: 0, samplesWritten: 0, samplesDropped: 0, samplesBad: 0, samplesPending: 0, sampleCallsBad: 0,
    spansLogged: 0, spansWritten: 0, spansDropped: 0, spansBad: 0, spansPending: 0, writeFailures: 0,
  };
}

/** The native counters plus the calls refused on this thread before reaching Rust. */
export function countersOf(native: NativeCounters, calls: CallCounters): RecorderCounters {
  return { ...native, eventsBad: calls.eventsBad, sampleCallsBad: calls.sampleCallsBad };
}

/** What `close()` returns, from the native close report. */
export function closeSummaryOf(report: NativeCloseReport, calls: CallCounters): CloseSummary {
  const c = report.compaction;
  return {
    counters: countersOf(report.counters, calls),
    compaction: c
      ? {
          partsMerged: c.partsMerged,
          rows: c.rows,
          bytes: c.bytes,
          samplePartsMerged: c.samplePartsMerged,
          sampleRows: c.sampleRows,
          spanPartsMerged: c.spanPartsMerged,
          spanRows: c.spanRows,
        }
      : null,
    error: report.error ?? null,
  };
}
