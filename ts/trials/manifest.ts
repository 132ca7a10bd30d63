/**
 * The manifest of one capture, `trials/<capture key>/capture.json` (docs/format.md#trials),
 * written last, atomically: a capture directory without it is unfinished and not listed.
 * Field names are snake_case, like the rest of the format.
 */
import type { Ledger } from './ledger.js';
import type { TrialInfo } from './trial-info.js';

export const CAPTURE_FILE = 'capture.json';
export const FILES_DIR = 'files';
/** 2: the ledger is bounded (ledger.ts), with `ledger.jsonl` beside it when it omits entries. */
export const CAPTURE_FORMAT_VERSION = 2;

/** One trajectory found in the trial and what became of it. */
export interface TrajectoryRecord {
  /** Trial-relative path of the trajectory document. */
  path: string;
  /** The multi-step step it belongs to (`steps/<name>/`), or null. */
  trial_step: string | null;
  /** `expanded`: turned into spans; `raw`: captured but no parser recognised it; `unreadable`: not JSON. */
  status: 'expanded' | 'raw' | 'unreadable';
  /** The parser's format; for a raw document, the `schema_version` it declares (e.g. an unknown `ATIF-v9.9`), if any. */
  format: string | null;
  parser: string | null;
  reason: string | null;
  turns: number;
  tool_calls: number;
  subtrajectories: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  cost_usd: number | null;
  session_id: string | null;
  /** Other documents the expansion read (subagents, continuations). */
  referenced_files: string[];
  /** Planned spans not written: past the capture's span limit (0 when none). */
  spans_cut: number;
  /** The first leniency notes of the parser (a cut first). */
  warnings: string[];
}

export interface CaptureManifest {
  kind: 'harbor_trial';
  format_version: number;
  capture_key: string;
  /** The training step the trial belongs to. */
  step: number;
  captured_at: string;
  sample_id: string | null;
  group_id: string | null;
  /** `sample` and `group` from the ids, as on the spans. */
  labels: Record<string, string>;
  source: {
    /** The trial directory as given at capture (or staging) time. */
    trial_dir: string;
    host: string;
    /** Correlation fields from the launcher (rollout id, sample id, session id…), kept as given. */
    context: Record<string, string>;
    /** Set when the capture went through a staging directory. */
    staged_at: string | null;
  };
  trial: TrialInfo;
  trajectories: TrajectoryRecord[];
  /** `count` written, `cut` planned but past `limit` (the rollout and trial_step spans are always written). */
  spans: { rollout_span_id: string; count: number; by_kind: Record<string, number>; cut: number; limit: number };
  ledger: Ledger;
}
