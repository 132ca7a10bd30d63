/**
 * The ledger of a capture: what the completeness claim covers, file by file. It covers the
 * declared regular files of the host trial directory and nothing more: the sandbox the
 * trial ran in is torn down before the trial returns, and whatever the harness did not
 * download from it was never on the host.
 *
 * A trial can hold any number of files, so the ledger kept in `capture.json` is bounded: the
 * counts (per status, per role, per reason) cover every entry, and the entries listed are
 * the first `LISTED_PER_REASON` of each reason. When that cuts any, the full list is kept
 * beside the manifest (ledger-file.ts).
 */
import { FILE_ROLES } from './roles.js';
import type { FileRole } from './roles.js';

/**
 * - `collected`: copied, with its size and sha256
 * - `missing`: declared (by the artifacts manifest or the trial config) but not on disk
 * - `skipped`: on disk but not copied, with the reason (hidden, a symbolic link, too large,
 *   not a regular file, a name that is not UTF-8, a declared path that would leave the
 *   trial directory, the directory the capture writes into)
 * - `unknown`: state the harness never materialised on the host (an unfinished trial's
 *   result, a reward the verifier never wrote): whether it existed cannot be told
 * - `empty`: a declared directory that exists and holds no file to collect
 */
export const COLLECTION_STATUSES = ['collected', 'missing', 'skipped', 'unknown', 'empty'] as const;
export type CollectionStatus = (typeof COLLECTION_STATUSES)[number];

/** Why an entry is not collected, as a stable code (the `reason` says it in words). */
export type ReasonCode =
  | 'unreadable_directory'
  | 'walk_limit'
  | 'vanished'
  | 'symlink'
  | 'hidden'
  | 'too_deep'
  | 'special_file'
  | 'too_large'
  | 'name_not_utf8'
  | 'output_directory'
  | 'declared_escape'
  | 'declared_absent'
  | 'declared_under_skipped'
  | 'declared_empty'
  | 'not_written'
  | 'no_reward'
  | 'copy_failed'
  | 'grew_past_limit';

export interface LedgerEntry {
  /** Trial-relative POSIX path (as declared, for a refused declaration). */
  path: string;
  role: FileRole;
  status: CollectionStatus;
  /** Bytes: copied, or on disk for a file skipped as too large. */
  size: number | null;
  sha256: string | null;
  reason: string | null;
  /** Null for a collected file. */
  reason_code: ReasonCode | null;
  /** Which files declared it (`artifacts/manifest.json`, `config.json`), if any. */
  declared_by: string[];
}

export type StatusCounts = Record<CollectionStatus, number>;

/** How many entries one reason has, and how many of them the manifest lists. */
export interface ReasonCount {
  status: CollectionStatus;
  reason_code: ReasonCode | null;
  count: number;
  listed: number;
}

export interface Ledger {
  covers: string;
  sandbox: string;
  /** The first LISTED_PER_REASON entries of each reason, sorted by path. */
  entries: LedgerEntry[];
  counts: StatusCounts;
  /** Bytes collected. */
  bytes: number;
  /** Entries per role and status (every role, every status). */
  by_role: Record<FileRole, StatusCounts>;
  /** Entries per reason, in status order. */
  by_reason: ReasonCount[];
  /** Entries in all. */
  total: number;
  /** Entries not listed in `entries`. */
  omitted: number;
  /** The file beside `capture.json` holding every entry (`ledger.jsonl`), when any is omitted. */
  entries_file: string | null;
}

/** Entries of one reason listed in capture.json; the rest are counted (docs/format.md#the-ledger). */
export const LISTED_PER_REASON = 20;

export const LEDGER_COVERS =
  'declared regular files in the host trial directory: each collected with its role, size and sha256; declared files that are absent listed as missing; hidden files, symbolic links, special and oversized files listed as skipped, never followed or read';
export const LEDGER_SANDBOX =
  'unknown: the harness tears the sandbox down before the trial returns, so files it did not download into the trial directory are not covered; for a pre-teardown guarantee, call capture from the producer\'s own lifecycle hook before teardown';

export function emptyCounts(): StatusCounts {
  return { collected: 0, missing: 0, skipped: 0, unknown: 0, empty: 0 };
}

export function countLedger(entries: readonly LedgerEntry[]): { counts: StatusCounts; bytes: number } {
  const counts = emptyCounts();
  let bytes = 0;
  for (const e of entries) {
    counts[e.status]++;
    if (e.status === 'collected') bytes += e.size ?? 0;
  }
  return { counts, bytes };
}

export function byPath(a: LedgerEntry, b: LedgerEntry): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** The ledger kept in capture.json for `entries` (sorted here, in place). */
export function makeLedger(entries: LedgerEntry[], entriesFile = 'ledger.jsonl'): Ledger {
  entries.sort(byPath);
  const by_role = Object.fromEntries(FILE_ROLES.map((r) => [r, emptyCounts()])) as Record<FileRole, StatusCounts>;
  const reasons = new Map<string, ReasonCount>();
  const listed: LedgerEntry[] = [];
  for (const e of entries) {
    (by_role[e.role] ?? by_role.other)[e.status]++;
    const key = `${e.status}/${e.reason_code}`;
    let r = reasons.get(key);
    if (r === undefined) {
      r = { status: e.status, reason_code: e.reason_code, count: 0, listed: 0 };
      reasons.set(key, r);
    }
    r.count++;
    if (r.listed < LISTED_PER_REASON) {
      r.listed++;
      listed.push(e);
    }
  }
  const by_reason = [...reasons.values()].sort((a, b) => COLLECTION_STATUSES.indexOf(a.status) - COLLECTION_STATUSES.indexOf(b.status));
  const omitted = entries.length - listed.length;
  return {
    covers: LEDGER_COVERS,
    sandbox: LEDGER_SANDBOX,
    entries: listed,
    ...countLedger(entries),
    by_role,
    by_reason,
    total: entries.length,
    omitted,
    entries_file: omitted > 0 ? entriesFile : null,
  };
}
