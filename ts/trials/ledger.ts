/**
 * The ledger of a capture: what the completeness claim covers, file by file. It covers the
 * declared regular files of the host trial directory and nothing more: the sandbox the
 * trial ran in is torn down before the trial returns, and whatever the harness did not
 * download from it was never on the host.
 */
import type { FileRole } from './roles.js';

/**
 * - `collected`: copied, with its size and sha256
 * - `missing`: declared (by the artifacts manifest or the trial config) but not on disk
 * - `skipped`: on disk but not copied, with the reason (hidden, a symbolic link, too large,
 *   not a regular file, a declared path that would leave the trial directory)
 * - `unknown`: state the harness never materialised on the host (an unfinished trial's
 *   result, a reward the verifier never wrote): whether it existed cannot be told
 */
export type CollectionStatus = 'collected' | 'missing' | 'skipped' | 'unknown';

export interface LedgerEntry {
  /** Trial-relative POSIX path (as declared, for a refused declaration). */
  path: string;
  role: FileRole;
  status: CollectionStatus;
  /** Bytes: copied, or on disk for a file skipped as too large. */
  size: number | null;
  sha256: string | null;
  reason: string | null;
  /** Which files declared it (`artifacts/manifest.json`, `config.json`), if any. */
  declared_by: string[];
}

export interface Ledger {
  covers: string;
  sandbox: string;
  entries: LedgerEntry[];
  counts: Record<CollectionStatus, number>;
  /** Bytes collected. */
  bytes: number;
}

export const LEDGER_COVERS =
  'declared regular files in the host trial directory: each collected with its role, size and sha256; declared files that are absent listed as missing; hidden files, symbolic links, special and oversized files listed as skipped, never followed or read';
export const LEDGER_SANDBOX =
  'unknown: the harness tears the sandbox down before the trial returns, so files it did not download into the trial directory are not covered; for a pre-teardown guarantee, call capture from the producer\'s own lifecycle hook before teardown';

export function countLedger(entries: readonly LedgerEntry[]): Pick<Ledger, 'counts' | 'bytes'> {
  const counts: Record<CollectionStatus, number> = { collected: 0, missing: 0, skipped: 0, unknown: 0 };
  let bytes = 0;
  for (const e of entries) {
    counts[e.status]++;
    if (e.status === 'collected') bytes += e.size ?? 0;
  }
  return { counts, bytes };
}

export function makeLedger(entries: LedgerEntry[]): Ledger {
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { covers: LEDGER_COVERS, sandbox: LEDGER_SANDBOX, entries, ...countLedger(entries) };
}
