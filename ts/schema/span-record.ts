/**
 * A span as read back (docs/format.md#spans). Times are Unix seconds; `end_time` and
 * `duration_s` are null while the span is open (a crash or a flush caught it running).
 */
export interface SpanRecord {
  span_id: string;
  parent_id: string | null;
  root_id: string;
  kind: string;
  name: string;
  step: number | null;
  start_time: number;
  end_time: number | null;
  duration_s: number | null;
  /** `ok`, `error` or `open`. */
  status: string;
  /** `Name: message` of the error the span ended with. */
  error: string | null;
  sample_id: string | null;
  group_id: string | null;
  /** Read-only: spans with the same labels share one frozen object. */
  labels: Readonly<Record<string, string>>;
  attributes: Record<string, unknown>;
  /** The stable key its id was derived from, if any. */
  key: string | null;
  rank: number;
}

/** A span and the spans under it, children ordered by start time. */
export interface SpanTreeNode {
  span: SpanRecord;
  children: SpanTreeNode[];
}

export interface SpanKindCount {
  kind: string;
  spans: number;
  /** Not ended when last written (a crash, or still running). */
  open: number;
  error: number;
}
