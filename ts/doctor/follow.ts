/**
 * The rules a follower of a live run shares (`probe watch`, `probe serve`): when to diagnose
 * again, and which findings are news.
 */
import { SEVERITY_RANK } from './finding.js';
import type { Finding, Severity } from './finding.js';

/**
 * Whether a run of `rows` rows is due another diagnosis after one of `rowsDiagnosed` rows
 * (-1: none yet): when it grew by a fiftieth, as the live doctor does. Each diagnosis
 * reads the whole run, so diagnosing on every new part would cost O(n²) over a run's life.
 */
export function diagnosisDue(rows: number, rowsDiagnosed: number): boolean {
  return rows >= rowsDiagnosed + Math.max(1, Math.floor(rowsDiagnosed / 50));
}

/**
 * The findings already reported for one run: a code is news the first time, and again only
 * when its severity rises or its onset moves past the last step reported for it.
 */
export class FindingLedger {
  private readonly reported = new Map<string, { severity: Severity; last: number }>();

  /** Whether `f` is news; records it either way. */
  isNew(f: Finding): boolean {
    const seen = this.reported.get(f.code);
    const fresh = !seen || SEVERITY_RANK[f.severity] > SEVERITY_RANK[seen.severity] || f.onset_step > seen.last;
    const severity = seen && SEVERITY_RANK[seen.severity] > SEVERITY_RANK[f.severity] ? seen.severity : f.severity;
    this.reported.set(f.code, { severity, last: Math.max(seen?.last ?? -Infinity, f.last_step) });
    return fresh;
  }
}
