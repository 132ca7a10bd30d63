/**
 * The contract between a trajectory parser and capture: the planned spans a document
 * expands into, what a parser is given and what it returns. Parsers (the built-in ATIF one
 * and users') depend on this module alone; plan.ts holds the registry that runs them.
 */

/** One span a trajectory expands into, before ids are assigned. */
export interface PlannedSpan {
  /** Unique within one trajectory expansion and stable across re-parses of the same file:
   *  e.g. `turn:3`, `turn:3/tool:toolu_01`, `turn:3/result:0`, `turn:7/sub:<trajectory_id or path>/turn:2`.
   *  Capture derives deterministic span ids from it, so it must not depend on Map order, time or randomness. */
  path: string;
  /** The path of the parent span, or null for a span directly under the rollout span. */
  parentPath: string | null;
  /** `turn` (one per trajectory step), `tool_call` (one per call), or `trajectory` for a subagent/continuation subtree root. */
  kind: string;
  name: string;
  /** Unix seconds (float), or null when unknown. */
  start: number | null;
  end: number | null;
  status: 'ok' | 'error';
  error: string | null;
  /** JSON-serialisable; finite numbers only (replace NaN/Infinity with null and note it). */
  attributes: Record<string, unknown>;
}

export interface TrajectoryContext {
  /** Loads a JSON document by a path relative to the directory of the trajectory being parsed (as written in the trajectory, e.g. `trajectory.cont-1.json` or `./sub/x.json`).
   *  Returns undefined when the file is missing, unreadable, not JSON, or refused (the caller refuses absolute paths, `..` escapes and symlinks). Paths are resolved by the caller; the parser passes them through verbatim plus the base dir it is in. */
  load(relPath: string, fromDir: string): { doc: unknown; path: string } | undefined;
  /** Directory (relative to the trial dir, POSIX) of the trajectory document being parsed, e.g. `agent`. */
  dir: string;
  /** Optional: trial-relative POSIX path of the document itself (e.g. `agent/trajectory.json`).
   *  Lets the cycle guard recognise a reference back to the root document by path; without
   *  it a reference that loads a document identical to the root is taken for a cycle. */
  file?: string;
  /** Optional: spans the capture will write of this document. A parser may keep only the
   *  first `maxSpans` (in emission order, parents first) and report how many more it
   *  planned in `spansCut`; capture cuts whatever a parser keeps beyond it anyway. */
  maxSpans?: number;
}

export interface TrajectoryPlan {
  /** e.g. `ATIF-v1.7`, or the registered parser name. */
  format: string;
  spans: PlannedSpan[];
  /** Optional: spans planned past `ctx.maxSpans` and not kept in `spans` (counted in `summary` all the same). */
  spansCut?: number;
  /** Trial-relative POSIX paths of every extra document the expansion read (subagent and continuation files), so capture can give them the `trajectory` role. */
  referencedFiles: string[];
  /** Human-readable notes about leniency applied (missing timestamps, unknown step keys, unresolved refs, non-finite numbers...). Never throws for bad content. */
  warnings: string[];
  /** Summary for the trial manifest: counts and totals. */
  summary: { turns: number; toolCalls: number; subtrajectories: number; promptTokens: number | null; completionTokens: number | null; cachedTokens: number | null; costUsd: number | null; agent: string | null; model: string | null; sessionId: string | null };
}

/** Returns null when the document is not of this parser's format (so detection can try the next parser). May throw only for a programming error; the caller catches and records it. */
export type TrajectoryParser = (doc: unknown, ctx: TrajectoryContext) => TrajectoryPlan | null;
