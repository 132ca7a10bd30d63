import { terminalLine as line } from '../text/control-chars.js';
import type { Diagnosis } from './diagnose.js';
import type { Finding } from './finding.js';

const LABEL = { critical: 'CRITICAL', warn: 'WARN', info: 'INFO' } as const;
const INDENT = ' '.repeat(10);

/**
 * A finding's confidence as every surface prints it (`probe doctor`, the report's HTML and
 * Markdown): a whole percent, `96%`.
 */
export function formatConfidence(confidence: number): string {
  return Number.isFinite(confidence) ? `${Math.round(confidence * 100)}%` : String(confidence);
}

/**
 * One finding for a person: the headline, then the remedy — or, when its root cause is
 * listed too (`shown`), a pointer to it instead of a second remedy.
 */
export function formatFinding(f: Finding, shown: ReadonlySet<string> = new Set()): string {
  const head = `${LABEL[f.severity].padEnd(8)}  ${f.code}  onset ~step ${f.onset_step}  confidence ${formatConfidence(f.confidence)}  ${line(f.message)}`;
  const lines = [head];
  if (f.root_cause && shown.has(f.root_cause)) lines.push(`${INDENT}root cause: ${f.root_cause} (same physics; its remedy applies)`);
  else {
    if (f.root_cause) lines.push(`${INDENT}root cause: ${f.root_cause}`);
    lines.push(`${INDENT}→ ${line(f.remedy)}`);
  }
  if (f.last_step !== f.onset_step) lines.push(`${INDENT}seen through step ${f.last_step}`);
  if (f.samples.length > 0) {
    lines.push(`${INDENT}evidence samples: ${f.samples.map((s) => `${line(s.sample_id) || '?'} at step ${s.step} (${line(s.why)})`).join('; ')}`);
  }
  return lines.join('\n');
}

/** `probe doctor`'s text output. */
export function formatDiagnosis(d: Diagnosis): string {
  const out: string[] = [];
  if (d.findings.length === 0) {
    out.push(`No problems found in ${d.points} logged points (${d.ran.length} detectors ran).`);
  } else {
    const shown = new Set(d.findings.map((f) => f.code));
    for (const f of d.findings) out.push(formatFinding(f, shown));
  }
  if (d.samples_error !== null) {
    out.push('');
    out.push(`Samples unreadable, so no finding cites sample evidence: ${line(d.samples_error)}`);
  }
  if (d.skipped.length > 0) {
    out.push('');
    out.push(`Not checked (no usable input), ${d.skipped.length} detector(s):`);
    for (const s of d.skipped) out.push(`  ${s.detector.padEnd(22)} ${s.codes.join(', ')}: ${line(s.reason)}`);
  }
  return out.join('\n');
}
