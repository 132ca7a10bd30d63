/**
 * `probe import trl|verl|jsonl`: realistic source logs written into temp dirs, imported,
 * and read back through RunReader and `probe info`: steps, columns, values, logged NaN,
 * printing resolution and the manifest's `extra.source`; the source never changes.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { RunReader, importJsonl, importTrl, importVerl } from '../ts/index.js';
import type { ImportResult, ImportSource, StoredStepRecord } from '../ts/index.js';
import { cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';
import { throwsCode } from './helpers/errors.js';

after(cleanupTempDirs);

/** Python's json.dumps writes NaN as a bare token: put one where `"__NaN__"` stands. */
function pythonJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replaceAll('"__NaN__"', 'NaN');
}

function writeSource(name: string, text: string): string {
  const file = path.join(tempDir('rlprobe-import-src-'), name);
  writeFileSync(file, text);
  return file;
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** Imports with `run`, asserting the source is byte-for-byte and mtime unchanged. */
function importUnchanged(file: string, run: (out: string) => ImportResult): { result: ImportResult; out: string } {
  const before = { hash: sha256(file), mtime: statSync(file).mtimeMs };
  const out = path.join(tempDir('rlprobe-import-out-'), 'run');
  const result = run(out);
  assert.equal(sha256(file), before.hash, 'source bytes unchanged');
  assert.equal(statSync(file).mtimeMs, before.mtime, 'source not written');
  assert.equal(result.sha256, before.hash);
  return { result, out };
}

/** Steps as read back, without the recorder's timestamp and rank. */
function stepsOf(out: string): StoredStepRecord[] {
  return RunReader.open(out)
    .steps()
    .map(({ timestamp: _t, rank: _r, ...rest }) => rest);
}

function sourceOf(out: string): ImportSource {
  return RunReader.open(out).manifest.extra.source as ImportSource;
}

const TRL_GRPO = {
  best_metric: null,
  epoch: 0.5,
  global_step: 10,
  is_world_process_zero: true,
  log_history: [
    // TRL ≤ 0.15 names
    {
      clip_ratio: 0.0,
      completion_length: 120.5,
      epoch: 0.25,
      grad_norm: 0.5,
      kl: 0.0005,
      learning_rate: 1e-6,
      loss: 0.0113,
      reward: 0.25,
      reward_std: 0.4,
      'rewards/accuracy_reward': 0.125,
      'rewards/format_reward': 0.5,
      step: 5,
    },
    // current names; the whole window NaN: grad_norm null, kl NaN
    {
      'clip_ratio/high_max': 0.01,
      'clip_ratio/low_mean': 0.0,
      'clip_ratio/region_mean': 0.02,
      'completions/clipped_ratio': 0.125,
      'completions/max_length': 256.0,
      'completions/mean_length': 130.5,
      'completions/mean_terminated_length': 110.25,
      entropy: 0.6,
      epoch: 0.5,
      frac_reward_zero_std: 0.3,
      grad_norm: null,
      kl: '__NaN__',
      learning_rate: 9e-7,
      loss: 0.02,
      num_tokens: 21444.0,
      reward: 0.5,
      reward_std: 0.35,
      'rewards/format_reward/mean': 0.75,
      'rewards/format_reward/std': 0.1,
      step: 10,
      step_time: 5.5,
    },
    { eval_loss: 0.2, eval_reward: 0.4, 'eval_completions/mean_length': 99.0, eval_runtime: 3.5, epoch: 0.5, step: 10 },
    'not an entry',
    { epoch: 0.6 },
    { train_runtime: 100.5, train_loss: 0.015, train_samples_per_second: 1.5, total_flos: 0.0, epoch: 0.5, step: 10 },
  ],
  logging_steps: 5,
  max_steps: 10,
  num_train_epochs: 1,
  train_batch_size: 8,
};

const TRL_PPO_STEP = {
  eps: 12,
  'objective/kl': 0.5,
  'objective/entropy': 45.25,
  'objective/non_score_reward': -0.025,
  'objective/rlhf_reward': 1.475,
  'objective/scores': 1.5,
  'policy/approxkl_avg': 0.001,
  'policy/clipfrac_avg': 0.05,
  'loss/policy_avg': -0.01,
  'loss/value_avg': 0.3,
  'val/clipfrac_avg': 0.1,
  'policy/entropy_avg': 2.5,
  'val/ratio': 1.01,
  'val/ratio_var': 0.0001,
  'val/num_eos_tokens': 60,
  lr: 3e-6,
  episode: 64,
  epoch: 0.1,
};

describe('probe import trl', { concurrency: true }, () => {
  test('GRPO, old and new names: one row per step, eval merged, NaN kept, summary in the manifest', () => {
    const file = writeSource('trainer_state.json', pythonJson(TRL_GRPO, 2));
    const { result, out } = importUnchanged(file, (o) => importTrl(file, o));
    assert.equal(result.rows, 2);
    assert.equal(result.algorithm, 'grpo');
    assert.equal(result.skipped_lines, 2);
    assert.deepEqual([result.first_step, result.last_step], [5, 10]);

    const steps = stepsOf(out);
    assert.deepEqual(steps[0], {
      step: 5,
      reward_mean: 0.25,
      reward_std: 0.4,
      kl_mean: 0.0005,
      clip_fraction: 0,
      loss: 0.0113,
      lr: 1e-6,
      grad_norm: 0.5,
      completion_len_mean: 120.5,
      reward_components: { accuracy_reward: 0.125, format_reward: 0.5 },
      extra: { epoch: 0.25 },
    });
    assert.deepEqual(steps[1], {
      step: 10,
      reward_mean: 0.5,
      reward_std: 0.35,
      kl_mean: NaN,
      entropy_mean: 0.6,
      clip_fraction: 0.02,
      zero_variance_group_frac: 0.3,
      loss: 0.02,
      lr: 9e-7,
      grad_norm: NaN,
      completion_len_mean: 130.5,
      completion_len_max: 256,
      max_len_hit_frac: 0.125,
      truncation_rate: 0.125,
      step_time_s: 5.5,
      reward_components: { format_reward: 0.75 },
      extra: {
        'clip_ratio/high_max': 0.01,
        'clip_ratio/low_mean': 0,
        'completions/mean_terminated_length': 110.25,
        epoch: 0.5,
        eval_loss: 0.2,
        eval_reward: 0.4,
        'eval_completions/mean_length': 99,
        eval_runtime: 3.5,
        num_tokens: 21444,
        'rewards/format_reward/std': 0.1,
      },
    });
    // a logged NaN, not a missing value
    assert.ok('grad_norm' in steps[1] && Number.isNaN(steps[1].grad_norm));

    const m = RunReader.open(out).manifest;
    assert.equal(m.algorithm, 'grpo');
    assert.equal(m.run_id, 'run');
    assert.deepEqual(m.trainer_config, {
      best_metric: null,
      epoch: 0.5,
      global_step: 10,
      is_world_process_zero: true,
      logging_steps: 5,
      max_steps: 10,
      num_train_epochs: 1,
      train_batch_size: 8,
    });
    const { imported_at: importedAt, ...source } = sourceOf(out);
    assert.ok(!Number.isNaN(Date.parse(importedAt)), importedAt);
    assert.deepEqual(source, {
      kind: 'import',
      format: 'trl',
      path: file,
      sha256: sha256(file),
      rows: 2,
      skipped_lines: 2,
      resolution: {},
      summary: { train_runtime: 100.5, train_loss: 0.015, train_samples_per_second: 1.5, total_flos: 0, epoch: 0.5 },
    });
  });

  test('PPO: objective/, policy/, loss/ and val/ names', () => {
    const state = { log_history: [{ ...TRL_PPO_STEP, step: 1 }, { ...TRL_PPO_STEP, 'objective/kl': 0.75, step: 2 }], train_batch_size: 64 };
    const file = writeSource('trainer_state.json', JSON.stringify(state));
    const { result, out } = importUnchanged(file, (o) => importTrl(file, o));
    assert.equal(result.algorithm, 'ppo');
    const steps = stepsOf(out);
    assert.deepEqual(steps.map((s) => s.kl_mean), [0.5, 0.75]);
    assert.deepEqual(steps[0], {
      step: 1,
      reward_mean: 1.5,
      kl_mean: 0.5,
      entropy_mean: 2.5,
      ratio_mean: 1.01,
      clip_fraction: 0.05,
      value_loss: 0.3,
      value_clip_fraction: 0.1,
      loss: -0.01,
      lr: 3e-6,
      extra: {
        eps: 12,
        'objective/entropy': 45.25,
        'objective/non_score_reward': -0.025,
        'objective/rlhf_reward': 1.475,
        'policy/approxkl_avg': 0.001,
        // TRL's val/ is no validation: kept clear of the held-out prefix
        'trl/val/ratio_var': 0.0001,
        'trl/val/num_eos_tokens': 60,
        episode: 64,
        epoch: 0.1,
      },
    });
    assert.deepEqual(RunReader.open(out).manifest.trainer_config, { train_batch_size: 64 });
    // objective/kl sums over tokens
    assert.equal(sourceOf(out).kl_per_token, false);
  });

  test('not a trainer_state.json, or not JSON: a clear error, nothing written', () => {
    const notState = writeSource('state.json', '{"global_step": 3}');
    const notJson = writeSource('state.json', '{"log_history": [');
    const out = path.join(tempDir(), 'run');
    throwsCode(() => importTrl(notState, out), 'RLPROBE_IMPORT_FAILED', /state\.json: no "log_history" array/);
    throwsCode(() => importTrl(notJson, out), 'RLPROBE_IMPORT_FAILED', /state\.json: not valid JSON/);
    throwsCode(() => importTrl(path.join(tempDir(), 'missing.json'), out), 'RLPROBE_IO', /cannot read .*missing\.json/);
    assert.equal(existsSync(out), false);
  });
});

const VERL_CONSOLE = [
  'INFO 05-12 10:00:00 [llm_engine.py:240] Initializing a V1 LLM engine',
  '(TaskRunner pid=2786) step:0 - val-core/openai/gsm8k/acc/mean@1:0.508 - val-aux/openai/gsm8k/reward/mean@1:0.565',
  '',
  // verl's {:.3f} console, colored Ray prefix
  '\u001b[36m(TaskRunner pid=2786)\u001b[0m step:1 - actor/entropy:0.323 - actor/kl_loss:0.000 - actor/pg_loss:0.001 - ' +
    'actor/pg_clipfrac:0.001 - actor/ppo_kl:-0.000 - actor/grad_norm:nan - actor/lr:0.000 - critic/score/mean:0.558 - ' +
    'critic/score/max:1.000 - critic/score/min:0.000 - critic/rewards/mean:0.558 - critic/advantages/mean:-0.016 - ' +
    'response_length/mean:288.698 - response_length/max:963.000 - response_length/clip_ratio:0.000 - timing_s/step:61.234 - ' +
    'timing_s/gen:30.500 - timing_s/update_actor:20.125 - perf/max_memory_allocated_gb:62.447',
  '(TaskRunner pid=2786) Saving checkpoint at step:1 to /ckpt',
  // newer verl prints pprint.pformat values: full precision, numpy 2 scalars wrapped
  'step:2 - actor/entropy:np.float64(0.3123456) - actor/pg_clipfrac_higher:0.0 - actor/lr:1e-06 - perf/throughput:1234 - ' +
    'actor/grad_norm:inf - flag:True',
  'Traceback (most recent call last):',
].join('\n');

const VERL_FILE_LOGGER = [
  pythonJson({ step: 1, elapsed_seconds: 5.5, data: { 'actor/entropy': 0.51234, 'actor/grad_norm': '__NaN__', 'critic/vf_loss': 0.25, 'critic/vf_explained_var': 0.1, 'critic/score/mean': 0.5, 'val-core/x/acc/mean@1': 0.7 } }),
  // orjson writes NaN as null
  JSON.stringify({ step: 2, data: { 'actor/entropy': 0.5, 'actor/grad_norm': null, 'critic/vf_clipfrac': 0.02, 'timing_s/gen': 30.5, 'timing_s/update_actor': 12.25, 'response_length/max': 512, 'note': 'text' } }),
  JSON.stringify({ step: 3, 'actor/entropy': 0.45, 'critic/score/mean': 0.75 }),
  JSON.stringify({ data: { 'actor/entropy': 1 } }),
  '{"step": 4, "data": {"actor/entr',
  '',
].join('\n');

describe('probe import verl', { concurrency: true }, () => {
  test('console: rounded lines carry resolution 0.001, full-precision lines none, noise skipped', () => {
    const file = writeSource('train.log', VERL_CONSOLE);
    const { result, out } = importUnchanged(file, (o) => importVerl(file, o));
    assert.equal(result.rows, 3);
    assert.equal(result.skipped_lines, 3); // vLLM line, checkpoint line, traceback; blank lines are not counted
    assert.equal(result.algorithm, 'unknown');
    const steps = stepsOf(out);
    assert.deepEqual(steps[0], { step: 0, extra: { 'val-aux/openai/gsm8k/reward/mean@1': 0.565, 'val-core/openai/gsm8k/acc/mean@1': 0.508 } });
    assert.ok(Object.is(steps[1].extra?.['actor/ppo_kl'], -0), 'printed -0.000 kept');
    const { extra, ...fields } = steps[1];
    assert.deepEqual(fields, {
      step: 1,
      reward_mean: 0.558,
      reward_max: 1,
      reward_min: 0,
      kl_mean: 0,
      entropy_mean: 0.323,
      clip_fraction: 0.001,
      adv_mean: -0.016,
      loss: 0.001,
      lr: 0,
      grad_norm: NaN,
      completion_len_mean: 288.698,
      completion_len_max: 963,
      max_len_hit_frac: 0,
      truncation_rate: 0,
      step_time_s: 61.234,
      generation_time_s: 30.5,
      optimization_time_s: 20.125,
    });
    assert.deepEqual(Object.keys(extra ?? {}).sort(), ['actor/ppo_kl', 'critic/rewards/mean', 'perf/max_memory_allocated_gb']);
    assert.deepEqual(steps[2], {
      step: 2,
      entropy_mean: 0.3123456,
      lr: 1e-6,
      grad_norm: Infinity,
      extra: { 'actor/pg_clipfrac_higher': 0, 'perf/throughput': 1234 },
    });
    // every column fed by a {:.3f} line; those seen only at full precision have none
    const rounded = [
      'extra.val-core/openai/gsm8k/acc/mean@1', 'extra.val-aux/openai/gsm8k/reward/mean@1', 'reward_mean', 'reward_max', 'reward_min',
      'kl_mean', 'entropy_mean', 'clip_fraction', 'adv_mean', 'loss', 'lr', 'grad_norm', 'completion_len_mean', 'completion_len_max',
      'truncation_rate', 'max_len_hit_frac', 'step_time_s', 'generation_time_s', 'optimization_time_s', 'extra.actor/ppo_kl',
      'extra.critic/rewards/mean', 'extra.perf/max_memory_allocated_gb',
    ];
    const expected = Object.fromEntries(rounded.sort().map((c) => [c, 0.001]));
    const sorted = (r: Record<string, number>) => Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b)));
    assert.deepEqual(sorted(sourceOf(out).resolution), sorted(expected));
    assert.deepEqual(result.resolution, sourceOf(out).resolution);
    assert.equal(sourceOf(out).skipped_lines, 3);
  });

  test('file backend JSON Lines: nested and flat, NaN token and null as NaN, critic → ppo', () => {
    const file = writeSource('metrics.jsonl', VERL_FILE_LOGGER);
    const { result, out } = importUnchanged(file, (o) => importVerl(file, o));
    assert.equal(result.algorithm, 'ppo');
    assert.equal(result.skipped_lines, 2); // no step; torn line
    assert.deepEqual(result.resolution, {});
    assert.deepEqual(stepsOf(out), [
      {
        step: 1,
        reward_mean: 0.5,
        entropy_mean: 0.51234,
        value_loss: 0.25,
        value_explained_variance: 0.1,
        grad_norm: NaN,
        extra: { 'val-core/x/acc/mean@1': 0.7 },
      },
      {
        step: 2,
        entropy_mean: 0.5,
        value_clip_fraction: 0.02,
        grad_norm: NaN,
        completion_len_max: 512,
        generation_time_s: 30.5,
        optimization_time_s: 12.25,
      },
      { step: 3, reward_mean: 0.75, entropy_mean: 0.45 },
    ]);
  });

  test('a fractional step is an error naming the line; a log with no metrics line is refused', () => {
    const bad = writeSource('metrics.jsonl', `${JSON.stringify({ step: 1, data: { a: 1 } })}\n\n${JSON.stringify({ step: 1.5, data: { a: 2 } })}\n`);
    const empty = writeSource('train.log', 'hello\nworld\n');
    const out = path.join(tempDir(), 'run');
    throwsCode(() => importVerl(bad, out), 'RLPROBE_IMPORT_FAILED', /metrics\.jsonl:3: step must be a non-negative integer \(got 1\.5\)/);
    throwsCode(() => importVerl(empty, out), 'RLPROBE_IMPORT_FAILED', /train\.log: no step rows found \(2 non-empty lines skipped\)/);
    assert.equal(existsSync(out), false);
  });
});

const JSONL_MAP = {
  step: 'meta.global_step',
  columns: {
    'train/kl': 'kl_mean',
    'train/kl_old': 'kl_mean',
    'rew/format': 'reward_component.format',
    'eval/acc': 'extra.eval/acc',
    nans: 'nan_count',
  },
  resolution: { 'train/kl': 0.001, 'perf.mem': 0.5 },
  algorithm: 'grpo',
};

const JSONL_LOG = [
  JSON.stringify({ meta: { global_step: 1, host: 'a' }, 'train/kl': 0.012, 'rew/format': 1, 'eval/acc': 0.5, perf: { mem: 10.5 }, nans: 0, note: 'text', loss: null }),
  pythonJson({ meta: { global_step: 2 }, 'train/kl_old': 0.02, 'rew/format': 0.5, nans: 3, perf: { mem: '__NaN__' } }),
  JSON.stringify({ note: 'no step' }),
  'not json',
  '',
].join('\n');

describe('probe import jsonl', { concurrency: true }, () => {
  test('mapped columns, aliases, nested keys, unmapped numbers to extra, resolution by source key', () => {
    const file = writeSource('log.jsonl', JSONL_LOG);
    const mapFile = writeSource('map.json', JSON.stringify(JSONL_MAP));
    const { result, out } = importUnchanged(file, (o) => importJsonl(file, o, { map: mapFile }));
    assert.equal(result.algorithm, 'grpo');
    assert.equal(result.skipped_lines, 2);
    assert.deepEqual(stepsOf(out), [
      { step: 1, kl_mean: 0.012, nan_count: 0, reward_components: { format: 1 }, extra: { 'eval/acc': 0.5, 'perf.mem': 10.5 } },
      { step: 2, kl_mean: 0.02, nan_count: 3, reward_components: { format: 0.5 }, extra: { 'perf.mem': NaN } },
    ]);
    assert.deepEqual(sourceOf(out).resolution, { kl_mean: 0.001, 'extra.perf.mem': 0.5 });
    assert.equal(sourceOf(out).format, 'jsonl');
    assert.equal('kl_per_token' in sourceOf(out), false, 'per-token KL is the default');
  });

  test('nulls: "nan" reads null as NaN; kl_per_token; the map may be an object; --algorithm wins', () => {
    const file = writeSource('log.jsonl', `${JSON.stringify({ s: 7, loss: null, kl: 0.5 })}\n`);
    const map = { step: 's', columns: { kl: 'kl_mean' }, nulls: 'nan', algorithm: 'grpo', kl_per_token: false } as const;
    const { result, out } = importUnchanged(file, (o) => importJsonl(file, o, { map, algorithm: 'ppo' }));
    assert.equal(result.algorithm, 'ppo');
    assert.equal(sourceOf(out).kl_per_token, false);
    assert.equal(RunReader.open(out).manifest.algorithm, 'ppo');
    assert.deepEqual(stepsOf(out), [{ step: 7, kl_mean: 0.5, extra: { loss: NaN } }]);
  });

  test('a non-integer, non-finite or non-numeric step is an error naming the line', () => {
    const map = { step: 'meta.global_step' };
    const out = path.join(tempDir(), 'run');
    const cases: Array<[string, RegExp]> = [
      ['{"meta": {"global_step": 2.5}, "a": 1}', /:2: step must be a non-negative integer \(got 2\.5\)/],
      ['{"meta": {"global_step": NaN}, "a": 1}', /:2: step must be a non-negative integer \(got NaN\)/],
      ['{"meta": {"global_step": "3"}, "a": 1}', /:2: step must be a non-negative integer \(got "3"\)/],
      ['{"meta": {"global_step": -1}, "a": 1}', /:2: step must be a non-negative integer \(got -1\)/],
    ];
    for (const [line, message] of cases) {
      const file = writeSource('log.jsonl', `{"meta": {"global_step": 1}, "a": 1}\n${line}\n`);
      throwsCode(() => importJsonl(file, out, { map }), 'RLPROBE_IMPORT_FAILED', message);
    }
    const counts = writeSource('log.jsonl', '{"s": 1, "n": 1.5}\n');
    throwsCode(() => importJsonl(counts, out, { map: { step: 's', columns: { n: 'nan_count' } } }), 'RLPROBE_IMPORT_FAILED', /log\.jsonl:1: n \(→ nan_count\) must be an integer count \(got 1\.5\)/);
    assert.equal(existsSync(out), false, 'nothing written');
  });

  test('a bad map names the field and the value', () => {
    const file = writeSource('log.jsonl', '{"s": 1, "a": 1}\n');
    const out = path.join(tempDir(), 'run');
    const bad = (map: unknown, message: RegExp) => throwsCode(() => importJsonl(file, out, { map: map as never }), 'RLPROBE_INVALID_OPTION', message);
    bad({ step: 's', columns: { a: 'kl' } }, /^map: columns\["a"\]: not a step column: expected a StepRecord field, reward_component\.<name> or extra\.<name> \(got "kl"\)$/);
    bad({ step: 's', columns: { a: 'kl_positional' } }, /columns\["a"\]: not a step column.*\(got "kl_positional"\)/);
    bad({ step: 's', columns: { a: 'extra.' } }, /columns\["a"\]: not a step column.*\(got "extra\."\)/);
    bad({ step: 's', colums: {} }, /^map: unknown key "colums"/);
    bad({ columns: {} }, /^map: step: .*\(got undefined\)$/);
    bad({ step: 's', resolution: { a: -1 } }, /^map: resolution\["a"\]: .*\(got -1\)$/);
    bad({ step: 's', nulls: 'zero' }, /^map: nulls: .*\(got "zero"\)$/);
    const mapFile = writeSource('map.json', JSON.stringify({ step: 's', columns: { a: 'lossy' } }));
    throwsCode(() => importJsonl(file, out, { map: mapFile }), 'RLPROBE_INVALID_OPTION', new RegExp(`^${mapFile.replaceAll('.', '\\.')}: columns\\["a"\\]: .*\\(got "lossy"\\)$`));
    throwsCode(() => importJsonl(file, out, { map: writeSource('map.json', '{"step": ') }), 'RLPROBE_INVALID_OPTION', /map\.json: not valid JSON/);
    assert.equal(existsSync(out), false);
  });
});

describe('import target', { concurrency: true }, () => {
  const file = writeSource('log.jsonl', '{"step": 1, "x": 1}\n');
  test('a non-empty directory or a file is refused; an empty directory is fine', () => {
    const busy = tempDir();
    writeFileSync(path.join(busy, 'notes.txt'), 'keep me');
    throwsCode(() => importVerl(file, busy), 'RLPROBE_INVALID_OPTION', /cannot import into .*: the directory is not empty/);
    assert.equal(readFileSync(path.join(busy, 'notes.txt'), 'utf8'), 'keep me');
    throwsCode(() => importVerl(file, file), 'RLPROBE_INVALID_OPTION', /exists and is not a directory/);
    const empty = path.join(tempDir(), 'empty');
    mkdirSync(empty);
    assert.equal(importVerl(file, empty).rows, 1);
    assert.equal(RunReader.open(empty).steps().length, 1);
  });

  test('rows the writer refuses fail the import with its reason, and what was written is removed', () => {
    // more distinct columns than a recording holds (4096)
    const wide = writeSource('metrics.jsonl', `${JSON.stringify({ step: 1, ...Object.fromEntries(Array.from({ length: 4100 }, (_, i) => [`m${i}`, i])) })}\n`);
    const fresh = path.join(tempDir(), 'run');
    throwsCode(() => importVerl(wide, fresh), 'RLPROBE_IMPORT_FAILED', /writing .*run failed: 1 rows to write, 0 written, 0 dropped, 1 refused; first refusal: .*would add more than 4096 new columns .*limit 4096/);
    assert.equal(existsSync(fresh), false);
    const empty = tempDir();
    throwsCode(() => importVerl(wide, empty), 'RLPROBE_IMPORT_FAILED');
    assert.deepEqual(readdirSync(empty), [], 'an existing empty directory is left empty');
  });
});

describe('probe import (CLI)', { concurrency: true }, () => {
  test('trl: one summary line; the run is a normal recording for probe info', async () => {
    const file = writeSource('trainer_state.json', pythonJson(TRL_GRPO));
    const out = path.join(tempDir(), 'grpo');
    const r = await runCli(['import', 'trl', file, out]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, `imported 2 rows (steps 5 … 10, 26 columns) from ${file} into ${out} (trl, algorithm grpo); 2 lines skipped\n`);
    const info = await runCli(['info', out, '--json']);
    assert.equal(info.code, 0, info.stderr);
    const j = JSON.parse(info.stdout) as { rows: number; first_step: number; last_step: number; manifest: { algorithm: string; extra: { source: ImportSource } }; status: { summary: string }; dropped_steps: number; bad_records: number };
    assert.deepEqual([j.rows, j.first_step, j.last_step, j.dropped_steps, j.bad_records], [2, 5, 10, 0, 0]);
    assert.equal(j.manifest.algorithm, 'grpo');
    assert.equal(j.manifest.extra.source.sha256, sha256(file));
    assert.equal(j.status.summary, 'closed cleanly');
  });

  test('verl --json and jsonl --map --algorithm', async () => {
    const log = writeSource('train.log', VERL_CONSOLE);
    const jsonl = writeSource('log.jsonl', JSONL_LOG);
    const map = writeSource('map.json', JSON.stringify(JSONL_MAP));
    const [v, j] = await Promise.all([
      runCli(['import', 'verl', log, path.join(tempDir(), 'v'), '--json']),
      runCli(['import', 'jsonl', jsonl, path.join(tempDir(), 'j'), '--map', map, '--algorithm', 'ppo']),
    ]);
    assert.equal(v.code, 0, v.stderr);
    const summary = JSON.parse(v.stdout) as ImportResult;
    assert.deepEqual([summary.format, summary.rows, summary.skipped_lines, summary.resolution.entropy_mean], ['verl', 3, 3, 0.001]);
    assert.equal(j.code, 0, j.stderr);
    assert.match(j.stdout, /^imported 2 rows \(steps 1 … 2, 5 columns, 2 printed rounded\) from .*log\.jsonl into .*\/j \(jsonl, algorithm ppo\); 2 lines skipped\n$/);
  });

  test('errors: exit 1 with one line naming the problem', async () => {
    const file = writeSource('log.jsonl', '{"s": 1, "a": 1}\n');
    const map = writeSource('map.json', JSON.stringify({ step: 's', columns: { a: 'kl' } }));
    const busy = tempDir();
    writeFileSync(path.join(busy, 'x'), '');
    const [badMap, noMap, full, help] = await Promise.all([
      runCli(['import', 'jsonl', file, path.join(tempDir(), 'o'), '--map', map]),
      runCli(['import', 'jsonl', file, path.join(tempDir(), 'o')]),
      runCli(['import', 'verl', file, busy]),
      runCli(['import', 'trl', '--help']),
    ]);
    assert.equal(badMap.code, 1);
    assert.equal(badMap.stderr, `probe: ${map}: columns["a"]: not a step column: expected a StepRecord field, reward_component.<name> or extra.<name> (got "kl")\n`);
    assert.equal(noMap.code, 64);
    assert.match(noMap.stdout + noMap.stderr, /--map/);
    assert.equal(full.code, 1);
    assert.match(full.stderr, /^probe: cannot import into .*: the directory is not empty/);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /\$ probe import trl .*<source> <out>/);
    assert.match(help.stdout, /trainer_state\.json/);
  });
});
