/** The migration chain's column renames, composed step by step (reader/migrations.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { RlprobeError } from '../ts/index.js';
import { ReadAdapter } from '../ts/reader/migrations.js';

describe('ReadAdapter renames', () => {
  test('a column renamed in two versions ends under its last name, both ways', () => {
    const a = new ReadAdapter(-1, [
      { from: -1, describe: 'x', stepColumns: { kl: 'kl_avg' } },
      { from: 0, describe: 'y', stepColumns: { kl_avg: 'kl_mean' } },
    ]);
    assert.equal(a.currentStepColumn('kl'), 'kl_mean');
    assert.equal(a.physicalStepColumn('kl_mean'), 'kl');
    assert.equal(a.currentStepColumn('loss'), 'loss');
    assert.deepEqual([...a.stepRenames], [['kl', 'kl_mean']]);
  });

  test('a swap within one version keeps both columns apart', () => {
    const a = new ReadAdapter(0, [{ from: 0, describe: 'swap', stepColumns: { a: 'b', b: 'a' } }]);
    assert.equal(a.currentStepColumn('a'), 'b');
    assert.equal(a.currentStepColumn('b'), 'a');
    assert.equal(a.physicalStepColumn('a'), 'b');
  });

  test('a name freed by one version and reused by the next', () => {
    // the first version renames x → y, the next gives the freed name x to old_x
    const a = new ReadAdapter(-1, [
      { from: -1, describe: 'x→y', stepColumns: { x: 'y' } },
      { from: 0, describe: 'old_x→x', stepColumns: { old_x: 'x' } },
    ]);
    assert.equal(a.currentStepColumn('x'), 'y');
    assert.equal(a.currentStepColumn('old_x'), 'x');
  });

  test('renaming a sample filter column is refused, not silently unfilterable', () => {
    assert.throws(
      () => new ReadAdapter(0, [{ from: 0, describe: 'r', sampleColumns: { reason: 'capture_reason' } }]),
      (e: unknown) => e instanceof RlprobeError && e.code === 'RLPROBE_SCHEMA_UNSUPPORTED' && /capture_reason/.test(e.message),
    );
    // other sample columns may be renamed
    const ok = new ReadAdapter(0, [{ from: 0, describe: 'r', sampleColumns: { reward: 'reward_total' } }]);
    assert.equal(ok.currentSampleColumn('reward'), 'reward_total');
  });
});
