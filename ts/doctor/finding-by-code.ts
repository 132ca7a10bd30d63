import { RlprobeError } from '../errors.js';
import type { Diagnosis } from './diagnose.js';
import type { Finding } from './finding.js';

/**
 * The finding with `code` in `diagnosis`, for `reader.samples({ aroundFinding })`. Throws
 * RlprobeError RLPROBE_INVALID_QUERY naming the findings the run has when it has no such one.
 */
export function findingByCode(diagnosis: Diagnosis, code: string): Finding {
  const found = diagnosis.findings.find((f) => f.code === code);
  if (found !== undefined) return found;
  const codes = diagnosis.findings.map((f) => f.code).join(', ') || 'none';
  throw new RlprobeError('RLPROBE_INVALID_QUERY', `invalid sample filter aroundFinding: no ${code} finding in this run (its findings: ${codes})`);
}
