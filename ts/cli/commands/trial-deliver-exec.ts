/** `probe trial deliver`, loaded only when it runs: trial-deliver.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { deliverStaged } from '../../trials/staging.js';
import { terminalLine } from '../terminal-text.js';
import { captureLine } from './trial-common.js';

export interface TrialDeliverArgs {
  staging: string;
  run: string;
  json: boolean;
  context: BaseContext;
}

export async function execTrialDeliver(command: TrialDeliverArgs): Promise<number> {
  const results = await deliverStaged(command.staging, { run: command.run });
  const out = command.context.stdout;
  if (command.json) out.write(`${JSON.stringify(results.map(({ manifest, ...r }) => ({ ...r, spans: manifest?.spans.count ?? null })), null, 2)}\n`);
  else {
    for (const r of results) {
      if (r.manifest) {
        out.write(`${terminalLine(captureLine(r.manifest, command.run).replace(/^captured/, 'delivered'))}\n`);
        continue;
      }
      if (r.error !== undefined) {
        out.write(`${terminalLine(`NOT DELIVERED ${r.dir}: ${r.error}`)}\n`);
        continue;
      }
      out.write(`${terminalLine(`NOT DELIVERED ${r.dir}: ${r.delivered} files confirmed, ${r.unconfirmed.length} not:`)}\n`);
      for (const u of r.unconfirmed) out.write(`${terminalLine(`  ${u.status.padEnd(7)} ${u.path}  (attempts ${u.attempts}${u.last_error ? `; ${u.last_error}` : ''})`)}\n`);
      out.write(`${terminalLine(`  run \`probe trial deliver ${r.dir} --run ${command.run}\` again to retry`)}\n`);
    }
  }
  return results.every((r) => r.status === 'delivered') ? 0 : 1;
}
