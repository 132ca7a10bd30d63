/** `probe doctor`, loaded only when it runs: doctor.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { diagnose } from '../../doctor/diagnose.js';
import { atLeast } from '../../doctor/finding.js';
import { formatDiagnosis } from '../../doctor/format.js';
import { native } from '../../errors.js';
import { doctorDetectors } from '../../native.js';
import { RunReader } from '../../reader/run-reader.js';
import { EXIT_CODES } from '../exit-codes.js';

export interface DoctorArgs {
  json: boolean;
  failOn: 'warn' | 'critical' | undefined;
  since: number | undefined;
  samples: boolean;
  context: BaseContext;
}

/** `probe doctor --detectors`: every detector, its codes and the columns it reads. */
export async function listDetectors(command: Pick<DoctorArgs, 'json' | 'context'>): Promise<number> {
  const list = native(() => doctorDetectors());
  command.context.stdout.write(command.json ? `${JSON.stringify(list, null, 2)}\n` : `${list.map((d) => `${d.name.padEnd(22)} ${d.codes.join(', ')}\n${' '.repeat(23)}reads ${d.reads}`).join('\n')}\n`);
  return 0;
}

export async function execDoctor(run: string, command: DoctorArgs): Promise<number> {
  const d = diagnose(RunReader.open(run), { since: command.since, samples: command.samples });
  command.context.stdout.write(command.json ? `${JSON.stringify(d, null, 2)}\n` : `${formatDiagnosis(d)}\n`);
  const level = command.failOn;
  return level && d.findings.some((f) => atLeast(f, level)) ? EXIT_CODES.findings : EXIT_CODES.ok;
}
