/**
 * Child for test/trial-delivery-crash.test.ts: delivers a staged trial into a run, to be
 * killed (SIGKILL) part way by the parent.
 *
 *   node --import tsx test/children/trial-deliver.ts <stagingDir> <runDir>
 *
 * Prints "delivering" before it starts and "done <status>" if it is not killed.
 */
import { deliverStaged } from '../../ts/index.js';

const [staging, run] = process.argv.slice(2);
if (!staging || !run) {
  console.error('usage: trial-deliver.ts <stagingDir> <runDir>');
  process.exit(64);
}
console.log('delivering');
const [r] = await deliverStaged(staging, { run });
console.log(`done ${r.status}`);
