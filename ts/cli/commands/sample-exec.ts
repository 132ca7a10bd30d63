/** `probe sample`, loaded only when it runs: sample.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { RlprobeError } from '../../errors.js';
import { RunReader } from '../../reader/run-reader.js';
import { formatSample, sampleJsonLine } from './sample-text.js';

export interface SampleArgs {
  run: string;
  id: string;
  json: boolean;
  context: BaseContext;
}

export async function execSample(command: SampleArgs): Promise<number> {
  const found = [...RunReader.open(command.run).samples({ sampleId: command.id })];
  if (found.length === 0) throw new RlprobeError('RLPROBE_INVALID_QUERY', `no sample with id ${JSON.stringify(command.id)} in ${command.run}`);
  // the same id on several ranks (or logged twice): every match, in reading order
  for (const s of found) {
    command.context.stdout.write(command.json ? sampleJsonLine(s) : formatSample(s, true));
  }
  return 0;
}
