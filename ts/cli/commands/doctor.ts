import { Command, Option, UsageError } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { EXIT_CODES } from '../exit-codes.js';
import { valueOption } from '../named-options.js';
import { isCount, isOneOf } from '../option-values.js';

/** Exit code when `--fail-on` matches: distinct from 1, which means probe itself failed. */
export const FINDINGS_EXIT_CODE = EXIT_CODES.findings;

export class DoctorCommand extends ProbeCommand {
  static paths = [['doctor']];
  static usage = Command.Usage({
    description: 'Diagnose a run: what is going wrong, from which step, with evidence and a remedy',
    details: `
      Runs every detector over the run's steps (and its samples, for evidence), most severe
      finding first. Lists the detectors that could not run for lack of input: missing is not
      healthy. With \`--fail-on\`, exits with code ${FINDINGS_EXIT_CODE} when a finding reaches that severity,
      so CI jobs and schedulers can gate on it.
    `,
    examples: [
      ['Diagnose a run', '$0 doctor runs/exp1'],
      ['Fail a CI job on any critical finding', '$0 doctor runs/exp1 --fail-on critical'],
      ['Only problems that began at step 5000 or later, as JSON', '$0 doctor runs/exp1 --since 5000 --json'],
    ],
  });

  run = Option.String({ name: 'run', required: false });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });
  failOn = valueOption('--fail-on', { value: 'SEVERITY', description: `Exit ${FINDINGS_EXIT_CODE} if a finding is at least this severe: warn or critical`, validator: isOneOf(['warn', 'critical']) });
  since = valueOption('--since', { value: 'STEP', description: 'Only findings whose onset is at or after this step', validator: isCount });
  samples = Option.Boolean('--samples', true, { description: 'Read per-sample records for evidence (--no-samples skips them)' });
  detectors = Option.Boolean('--detectors', false, { description: 'List the detectors, their codes and the columns they read, and exit' });

  async exec(): Promise<number> {
    if (this.detectors) {
      const { listDetectors } = await import('./doctor-exec.js');
      return listDetectors(this);
    }
    if (this.run === undefined) throw new UsageError('missing the run directory: probe doctor <run> (or probe doctor --detectors)');
    const { execDoctor } = await import('./doctor-exec.js');
    return execDoctor(this.run, this);
  }
}
