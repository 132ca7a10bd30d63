/**
 * `probe import tensorboard`: event files written by the real Python packages (tensorboardX
 * and tensorboard, pinned in test/interop/requirements.txt; test/interop/py_tensorboard.py),
 * imported and read back through RunReader. Every value, step and wall time is what was
 * written and what TensorBoard's own loader reads; TRL's and verl's tags land in their
 * columns, the rest in extra.*; a torn last record is read up to the tear with a warning;
 * damage, empty and foreign files are refused naming the file and the byte offset.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { RunReader, diagnose } from '../ts/index.js';
import type { ImportResult, ImportSource, StoredStepRecord } from '../ts/index.js';
import { importTensorboard } from '../ts/import/tensorboard.js';
import { throwsCode } from './helpers/errors.js';
import { cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';
import { interopPython, runPython } from './helpers/python.js';

after(cleanupTempDirs);

const env = interopPython();
const skip = 'skip' in env ? env.skip : false;
const python = 'python' in env ? env.python : '';

/** [tag, step, value as stored, wall time], in the order written. */
type Scalar = [tag: string, step: number, value: number, wallTime: number];

/** What TensorBoard's own loader reads from one file (it stops silently at a tear or damage). */
interface TensorboardRead {
  records: number;
  scalars: Scalar[];
  non_scalar: Record<string, number>;
}

/** Writes a log directory with the real packages; returns it and the scalars written. */
function writeLog(mode: string, steps = 20): { dir: string; written: Scalar[] } {
  const dir = path.join(tempDir('rlprobe-tb-src-'), mode);
  const written = runPython(python, 'py_tensorboard.py', ['write', mode, dir, String(steps)]) as Scalar[];
  return { dir, written };
}

function tensorboardRead(file: string): TensorboardRead {
  return runPython(python, 'py_tensorboard.py', ['read', file]) as TensorboardRead;
}

/** The one event file directly in `dir`. */
function eventFile(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.startsWith('events.out.tfevents.'));
  assert.equal(files.length, 1, `one event file in ${dir}: ${files.join(', ')}`);
  return path.join(dir, files[0]);
}

/** A copy of `file` in a folder of its own, to damage. */
function copyOf(file: string): string {
  const copy = path.join(tempDir('rlprobe-tb-copy-'), path.basename(file));
  copyFileSync(file, copy);
  return copy;
}

/** Byte offsets of a TFRecord file's records (8-byte length, 4-byte CRC, data, 4-byte CRC). */
function recordOffsets(file: string): number[] {
  const bytes = readFileSync(file);
  const offsets: number[] = [];
  for (let at = 0; at < bytes.length; at += 16 + Number(bytes.readBigUInt64LE(at))) offsets.push(at);
  return offsets;
}

function sha256(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function outDir(): string {
  return path.join(tempDir('rlprobe-tb-out-'), 'run');
}

/** Imports `source`, asserting its files are byte-for-byte and mtime unchanged. */
function importUnchanged(source: string, files: string[], options = {}): { result: ImportResult; out: string } {
  const before = files.map((f) => ({ hash: sha256(readFileSync(f)), mtime: statSync(f).mtimeMs }));
  const out = outDir();
  const result = importTensorboard(source, out, options);
  files.forEach((f, i) => {
    assert.equal(sha256(readFileSync(f)), before[i].hash, `${f} unchanged`);
    assert.equal(statSync(f).mtimeMs, before[i].mtime, `${f} not written`);
  });
  return { result, out };
}

function stepsOf(out: string): StoredStepRecord[] {
  return RunReader.open(out)
    .steps()
    .map(({ rank: _r, ...rest }) => rest);
}

function sourceOf(out: string): ImportSource {
  return RunReader.open(out).manifest.extra.source as ImportSource;
}

function put(record: StoredStepRecord, column: string, value: number): void {
  const [group, name] = column.startsWith('extra.') ? ['extra', column.slice(6)] : column.startsWith('reward_component.') ? ['reward_components', column.slice(17)] : [null, column];
  if (group === null) record[name] = value;
  else ((record[group] ??= {}) as Record<string, number>)[name] = value;
}

/**
 * The rows an import must give for `scalars` (in write order, a later write of a tag and
 * step winning): each tag in its columns, the step's timestamp the earliest wall time.
 */
function expectedSteps(scalars: Scalar[], columns: Record<string, string[]>, summaryTags: readonly string[] = []): StoredStepRecord[] {
  const rows = new Map<number, Map<string, Scalar>>();
  for (const s of scalars) {
    if (summaryTags.includes(s[0])) continue;
    if (!rows.has(s[1])) rows.set(s[1], new Map());
    rows.get(s[1])!.set(s[0], s);
  }
  return [...rows.keys()]
    .sort((a, b) => a - b)
    .map((step) => {
      const row = [...rows.get(step)!.values()];
      const record: StoredStepRecord = { step, timestamp: Math.min(...row.map((s) => s[3])) };
      for (const [tag, , value] of row) for (const column of columns[tag] ?? [`extra.${tag}`]) put(record, column, value);
      return record;
    });
}

/** TRL's tags (transformers' TensorBoardCallback: train/<trainer_state key>) and their columns: the spec. */
const TRL_COLUMNS: Record<string, string[]> = {
  'train/reward': ['reward_mean'],
  'train/reward_std': ['reward_std'],
  'train/frac_reward_zero_std': ['zero_variance_group_frac'],
  'train/kl': ['kl_mean'],
  'train/entropy': ['entropy_mean'],
  'train/completions/mean_length': ['completion_len_mean'],
  'train/completions/max_length': ['completion_len_max'],
  'train/completions/clipped_ratio': ['truncation_rate', 'max_len_hit_frac'],
  'train/clip_ratio/region_mean': ['clip_fraction'],
  'train/loss': ['loss'],
  'train/learning_rate': ['lr'],
  'train/grad_norm': ['grad_norm'],
  'train/rewards/accuracy_reward/mean': ['reward_component.accuracy_reward'],
  'train/rewards/format_reward/mean': ['reward_component.format_reward'],
};
const TRL_SUMMARY = ['train_runtime', 'train_samples_per_second', 'train_steps_per_second', 'total_flos', 'train_loss'];
const TRL_SUMMARY_TAGS = TRL_SUMMARY.map((k) => `train/${k}`);

const VERL_COLUMNS: Record<string, string[]> = {
  'actor/entropy': ['entropy_mean'],
  'actor/kl_loss': ['kl_mean'],
  'actor/pg_clipfrac': ['clip_fraction'],
  'actor/grad_norm': ['grad_norm'],
  'actor/pg_loss': ['loss'],
  'actor/lr': ['lr'],
  'critic/score/mean': ['reward_mean'],
  'critic/vf_loss': ['value_loss'],
  'response_length/mean': ['completion_len_mean'],
  'response_length/clip_ratio': ['truncation_rate', 'max_len_hit_frac'],
  'timing_s/step': ['step_time_s'],
};

describe('probe import tensorboard: files written by tensorboardX and tensorboard', { skip, concurrency: true }, () => {
  test('TRL via tensorboardX: every scalar, step and wall time as written and as TensorBoard reads it; histograms and text counted', () => {
    const { dir, written } = writeLog('trl', 20);
    const file = eventFile(dir);
    const tb = tensorboardRead(file);
    assert.deepEqual(tb.scalars, written, 'TensorBoard reads what tensorboardX wrote');

    const { result, out } = importUnchanged(dir, [file]);
    assert.equal(result.format, 'tensorboard');
    assert.equal(result.algorithm, 'grpo');
    assert.equal(result.tag_family, 'trl');
    assert.deepEqual([result.rows, result.first_step, result.last_step], [20, 1, 20]);
    assert.equal(result.records, tb.records);
    assert.deepEqual(result.skipped_non_scalar, tb.non_scalar);
    assert.deepEqual(result.skipped_non_scalar, { 'args/text_summary': 1, 'train/completion/text_summary': 5, 'train/logprobs': 5 });
    // tensorboardX writes one event per call: all but the header and the scalars held none
    assert.equal(result.skipped_lines, tb.records - 1 - written.length);
    assert.deepEqual(result.warnings, []);
    assert.deepEqual(result.files, [{ path: file, sha256: sha256(readFileSync(file)), bytes: statSync(file).size, records: tb.records }]);

    const steps = stepsOf(out);
    assert.deepEqual(steps, expectedSteps(written, TRL_COLUMNS, TRL_SUMMARY_TAGS));
    // float32 kept as it is in the file: not rounded back to the decimal the trainer logged
    assert.equal(steps[0].lr, Math.fround(1e-6 * (1 - 1 / 21)));
    assert.notEqual(steps[0].lr, 1e-6 * (1 - 1 / 21));
    assert.ok(Number.isNaN(steps[2].grad_norm), 'a logged NaN stays NaN');
    assert.equal(steps[4].extra?.['eval/reward'], written.find(([t, s]) => t === 'eval/reward' && s === 5)?.[2]);

    const m = RunReader.open(out).manifest;
    assert.equal(m.algorithm, 'grpo');
    const { imported_at: _at, files: _f, ...source } = sourceOf(out);
    assert.deepEqual(source, {
      kind: 'import',
      format: 'tensorboard',
      path: dir,
      sha256: sha256(`${sha256(readFileSync(file))}  ${path.basename(file)}\n`),
      rows: 20,
      skipped_lines: result.skipped_lines,
      resolution: {},
      summary: Object.fromEntries(TRL_SUMMARY.map((k) => [k, written.find(([t]) => t === `train/${k}`)![2]])),
      records: tb.records,
      skipped_non_scalar: tb.non_scalar,
      tag_family: 'trl',
      warnings: [],
    });

    // the file alone: the same rows, its own SHA-256
    const single = importTensorboard(file, outDir());
    assert.equal(single.sha256, sha256(readFileSync(file)));
    assert.deepEqual(stepsOf(single.out_dir), steps);
  });

  test('verl via tensorboard.summary.Writer and EventFileWriter: scalar tensors of every encoding, verl names mapped', () => {
    const { dir, written } = writeLog('verl', 20);
    const files = readdirSync(dir)
      .sort()
      .map((f) => path.join(dir, f));
    assert.equal(files.length, 2);
    const tb = files.map(tensorboardRead);
    const byKey = (s: Scalar) => `${s[1]}\u0000${s[0]}`;
    const sorted = (list: Scalar[]) => [...list].sort((a, b) => (byKey(a) < byKey(b) ? -1 : 1));
    assert.deepEqual(sorted(tb.flatMap((r) => r.scalars)), sorted(written), 'TensorBoard reads what was written');

    const { result, out } = importUnchanged(dir, files);
    assert.deepEqual([result.algorithm, result.tag_family, result.rows, result.first_step, result.last_step], ['ppo', 'verl', 20, 0, 19]);
    assert.equal(result.files?.length, 2);
    assert.equal(result.records, tb[0].records + tb[1].records);
    assert.deepEqual([result.skipped_lines, result.skipped_non_scalar, result.warnings], [0, {}, []]);
    const steps = stepsOf(out);
    assert.deepEqual(steps, expectedSteps(written, VERL_COLUMNS));
    // double_val and int64 keep every bit; float16 is what it held
    assert.equal(steps[1].step_time_s, 60 + 1 / 3);
    assert.equal(steps[7].extra?.['training/global_step'], 7);
    assert.equal(steps[1].extra?.['perf/max_memory_allocated_gb'], 40.15625); // 40 + 1/7 as float16
    assert.equal(steps[2].value_loss, Infinity);
    assert.ok('val-core/openai/gsm8k/acc/mean@1' in steps[5].extra!, 'held-out metric in extra');

    const grpo = importTensorboard(dir, outDir(), { algorithm: 'grpo' });
    assert.equal(RunReader.open(grpo.out_dir).manifest.algorithm, 'grpo', '--algorithm wins');
  });

  test('a resumed run: two files in one folder merged by step, the later writer winning, with a warning', () => {
    const { dir, written } = writeLog('resume');
    const { result, out } = importUnchanged(dir, readdirSync(dir).map((f) => path.join(dir, f)));
    assert.deepEqual(stepsOf(out), expectedSteps(written, TRL_COLUMNS));
    assert.deepEqual([result.rows, result.first_step, result.last_step], [15, 1, 15]);
    assert.deepEqual(result.warnings, ['6 values written again for the same tag and step with another value (a resumed or restarted run?): the last written is kept']);
    assert.deepEqual(sourceOf(out).warnings, result.warnings);
  });

  test('one run in two folders (disjoint tags) merges; two runs sharing tags are refused, listed', () => {
    const split = writeLog('split');
    const { result, out } = importUnchanged(split.dir, ['train', 'eval'].map((f) => eventFile(path.join(split.dir, f))));
    assert.equal(result.files?.length, 2);
    assert.deepEqual(stepsOf(out), expectedSteps(split.written, TRL_COLUMNS));

    const runs = writeLog('runs');
    const target = outDir();
    throwsCode(
      () => importTensorboard(runs.dir, target),
      'RLPROBE_IMPORT_FAILED',
      new RegExp(
        `^${runs.dir}: event files of 2 runs: run_a \\(1 file, steps 1 … 5, 2 tags\\); run_b \\(1 file, steps 1 … 5, 1 tag\\)\\. ` +
          `They share tags \\(e\\.g\\. "train/reward" in run_a and run_b\\), so they are not one run: import one run folder at a time ` +
          `\\(probe import tensorboard ${runs.dir}/run_a OUT\\), or one event file$`,
      ),
    );
    assert.equal(existsSync(target), false, 'nothing written');
    assert.equal(importTensorboard(path.join(runs.dir, 'run_b'), outDir()).rows, 5);
  });

  test('tags of neither family land in extra.<tag>; a mix is mapped by the larger family; both with a warning', () => {
    const generic = writeLog('generic');
    const g = importTensorboard(generic.dir, outDir());
    assert.deepEqual([g.tag_family, g.algorithm], ['none', 'unknown']);
    assert.deepEqual(g.warnings, ["none of the 2 scalar tags is TRL's (train/…, eval/…) or verl's (actor/…, critic/…, …): every scalar is kept as extra.<tag>"]);
    assert.deepEqual(stepsOf(g.out_dir), expectedSteps(generic.written, {}));

    const mixed = writeLog('mixed');
    const m = importTensorboard(mixed.dir, outDir());
    assert.equal(m.tag_family, 'verl');
    assert.deepEqual(m.warnings, ['1 TRL-style (train/…, eval/…) and 2 verl-style (actor/…, critic/…) tags: mapped as verl; the others are kept as extra.<tag>']);
    assert.deepEqual(stepsOf(m.out_dir), expectedSteps(mixed.written, VERL_COLUMNS));
  });

  test('a torn last record (a crashed writer): the records before the tear, as TensorBoard reads them, and a warning', () => {
    const { dir, written } = writeLog('trl', 6);
    const file = eventFile(dir);
    const offsets = recordOffsets(file);
    const at = offsets[offsets.length - 12];
    const cases = [
      { cut: at + 12 + 5, warning: new RegExp(`: the last record \\(at byte ${at}\\) is torn, 17 of its \\d+ bytes are in the file: a writer that crashed or is still writing; read the ${offsets.length - 12} records before it$`) },
      { cut: at + 7, warning: new RegExp(`: the last record \\(at byte ${at}\\) is torn, inside its 12-byte header \\(7 bytes\\)`) },
      { cut: at, zeros: 100, warning: new RegExp(`: the last 100 bytes, from byte ${at} on, are zeros \\(a crash before the data reached the disk\\); read the ${offsets.length - 12} records before them$`) },
      // the header reached the disk, its data did not: zeros where the data and its checksum belong
      {
        cut: at + 12,
        zeros: Number(readFileSync(file).readBigUInt64LE(at)) + 4,
        warning: new RegExp(`: the last \\d+ bytes, from byte ${at + 12} on, are zeros \\(a crash before the data reached the disk\\); read the ${offsets.length - 12} records before them$`),
      },
    ];
    for (const c of cases) {
      const torn = copyOf(file);
      truncateSync(torn, c.cut);
      if (c.zeros) writeFileSync(torn, Buffer.alloc(c.zeros), { flag: 'a' });
      const tb = tensorboardRead(torn);
      assert.equal(tb.records, offsets.length - 12);
      assert.ok(tb.scalars.length < written.length);
      assert.deepEqual(tb.scalars, written.slice(0, tb.scalars.length), 'TensorBoard reads up to the tear');

      const { result, out } = importUnchanged(torn, [torn]);
      assert.equal(result.warnings?.length, 1, JSON.stringify(result.warnings));
      assert.ok(result.warnings[0].startsWith(`${torn}: `), result.warnings[0]);
      assert.match(result.warnings[0], c.warning);
      assert.equal(result.records, tb.records);
      assert.deepEqual(stepsOf(out), expectedSteps(tb.scalars, TRL_COLUMNS, TRL_SUMMARY_TAGS));
      assert.equal(sourceOf(out).summary, undefined, 'the closing log was past the tear');
    }
  });

  test('a record larger than the read buffer (3 MiB of text) is read whole; torn inside it, the warning counts its bytes', () => {
    const { dir, written } = writeLog('large');
    const file = eventFile(dir);
    const whole = importTensorboard(file, outDir());
    assert.deepEqual(whole.skipped_non_scalar, { 'train/completions/text_summary': 1 });
    assert.deepEqual(stepsOf(whole.out_dir), expectedSteps(written, TRL_COLUMNS));

    const offsets = recordOffsets(file);
    const big = offsets.findIndex((at, i) => (offsets[i + 1] ?? statSync(file).size) - at > 3 << 20);
    const torn = copyOf(file);
    truncateSync(torn, offsets[big] + (2 << 20));
    const { result, out } = importUnchanged(torn, [torn]);
    assert.deepEqual(result.warnings, [
      `${torn}: the last record (at byte ${offsets[big]}) is torn, ${2 << 20} of its ${offsets[big + 1] - offsets[big]} bytes are in the file: a writer that crashed or is still writing; read the ${big} records before it`,
    ]);
    assert.deepEqual(stepsOf(out), expectedSteps(tensorboardRead(torn).scalars, TRL_COLUMNS));
  });

  test('a checksum mismatch mid-file is an error naming the file and the byte offset; nothing is written', () => {
    const { dir } = writeLog('trl', 6);
    const file = eventFile(dir);
    const offsets = recordOffsets(file);
    const k = Math.floor(offsets.length / 2);
    const at = offsets[k];
    for (const [where, what] of [
      [at + 12 + 3, 'record data checksum mismatch \\(\\d+ bytes of data; stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}\\): the file is damaged here'],
      [at + 1, 'record length checksum mismatch \\(stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}\\): the file is damaged here'],
    ] as const) {
      const damaged = copyOf(file);
      const bytes = readFileSync(damaged);
      bytes[where] ^= 0x20;
      writeFileSync(damaged, bytes);
      // TensorBoard's loader stops there without a word; the import refuses
      assert.equal(tensorboardRead(damaged).records, k);
      const target = outDir();
      throwsCode(() => importTensorboard(damaged, target), 'RLPROBE_IMPORT_FAILED', new RegExp(`^${damaged}: byte ${at}: ${what}$`));
      assert.equal(existsSync(target), false);
    }
  });

  test('a TFRecord file of non-events, a negative step, an empty file beside a good one', () => {
    const records = writeLog('records');
    const notEvents = path.join(records.dir, 'events.out.tfevents.0.records');
    throwsCode(() => importTensorboard(records.dir, outDir()), 'RLPROBE_IMPORT_FAILED', new RegExp(`^${notEvents}: byte 0: not a TensorBoard event file: the record is no tensorboard Event \\(.+\\)$`));

    const negative = writeLog('negative');
    const file = eventFile(negative.dir);
    const last = recordOffsets(file).at(-1);
    throwsCode(() => importTensorboard(negative.dir, outDir()), 'RLPROBE_IMPORT_FAILED', new RegExp(`^${file}: byte ${last}: tag "train/reward": step must be a non-negative integer \\(got -1\\)$`));

    // a writer that opened its file and never flushed, beside the real log
    const trl = writeLog('trl', 3);
    const log = eventFile(trl.dir);
    const empty = path.join(trl.dir, 'events.out.tfevents.1700000000.host.2.0');
    writeFileSync(empty, '');
    const { result, out } = importUnchanged(trl.dir, [log, empty]);
    assert.deepEqual(result.warnings, [`${empty}: empty file: no event record (a writer that never flushed): skipped`]);
    assert.equal(result.files?.length, 2);
    assert.deepEqual(stepsOf(out), expectedSteps(trl.written, TRL_COLUMNS, TRL_SUMMARY_TAGS));
  });

  test('CLI: one summary line, warnings on stderr, exit 0; several runs exit 1 with one line; --json', async () => {
    const { dir } = writeLog('trl', 6);
    const file = eventFile(dir);
    const offsets = recordOffsets(file);
    const torn = copyOf(file);
    truncateSync(torn, offsets.at(-3)! + 20);
    const runs = writeLog('runs');
    const [ok, json, refused] = await Promise.all([
      runCli(['import', 'tensorboard', path.dirname(torn), path.join(tempDir(), 'a')]),
      runCli(['import', 'tensorboard', torn, path.join(tempDir(), 'b'), '--json', '--algorithm', 'ppo']),
      runCli(['import', 'tensorboard', runs.dir, path.join(tempDir(), 'c')]),
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(
      ok.stdout,
      new RegExp(`^imported 6 rows \\(steps 1 … 6, 23 columns\\) from ${path.dirname(torn)} into .*/a \\(tensorboard, algorithm grpo\\); ${offsets.length - 3} records read from 1 event file, 3 without a scalar skipped \\(non-scalar summaries: 3 under 3 tags\\)\\n$`),
    );
    assert.match(ok.stderr, new RegExp(`^probe: warning: ${torn}: the last record \\(at byte ${offsets.at(-3)}\\) is torn, 20 of its \\d+ bytes are in the file: .*\\n$`));
    assert.equal(json.code, 0, json.stderr);
    const summary = JSON.parse(json.stdout) as ImportResult;
    assert.deepEqual([summary.format, summary.algorithm, summary.records, summary.warnings?.length], ['tensorboard', 'ppo', offsets.length - 3, 1]);
    assert.match(json.stderr, /^probe: warning: .* is torn/);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^probe: .*: event files of 2 runs: run_a .* import one run folder at a time .*\n$/);
    assert.equal(refused.stderr.split('\n').length, 2, 'one line');
  });
});

/** Median of the present values of `series` at steps `from..to` (inclusive). */
function medianAt(steps: Float64Array, series: Float64Array, from: number, to: number): number {
  const v = [...series].filter((x, i) => steps[i] >= from && steps[i] <= to && !Number.isNaN(x)).sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

describe('the doctor on an imported TensorBoard run', { skip }, () => {
  test('a TRL run whose entropy collapses from step 200: ENTROPY_COLLAPSE dated there, its stated levels re-derived from RunView', async () => {
    const { dir } = writeLog('collapse', 400);
    const out = outDir();
    importTensorboard(dir, out);
    const d = diagnose(RunReader.open(out));
    const f = d.findings.find((x) => x.code === 'ENTROPY_COLLAPSE');
    assert.ok(f, JSON.stringify(d.findings.map((x) => x.code)));
    assert.equal(f.severity, 'critical');
    assert.ok(Math.abs(f.onset_step - 200) <= 5, `onset ${f.onset_step}`);
    // every number the finding states is a median of the imported column at the stated steps
    const l = f.levels;
    assert.ok(l, 'levels stated');
    assert.equal(l.column, 'entropy_mean');
    const view = RunReader.open(out).view();
    const entropy = view.series('entropy_mean');
    assert.equal(medianAt(view.steps, entropy, ...l.start_steps), l.start);
    assert.equal(medianAt(view.steps, entropy, ...l.end_steps), l.end);
    assert.ok(l.start_steps[1] < 200, `start taken before the change: ${l.start_steps}`);
    assert.ok(Math.abs(l.start / 0.62 - 1) < 0.05 && l.ratio < 0.15, JSON.stringify(l));
    assert.ok(f.message.includes(`(steps ${l.start_steps[0]}–${l.start_steps[1]})`), f.message);
    // a healthy rest: nothing else at warn or worse
    assert.deepEqual(
      d.findings.filter((x) => x.severity !== 'info' && x.code !== 'ENTROPY_COLLAPSE').map((x) => x.code),
      [],
    );
    const cli = await runCli(['doctor', out]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /^CRITICAL {2}ENTROPY_COLLAPSE {2}onset ~step \d+ .*entropy collapsed: entropy_mean [\d.]+ \(steps \d+–\d+\) → [\d.e-]+ \(steps \d+–400\)/m);
  });
});

describe('probe import tensorboard: not an event log', { concurrency: true }, () => {
  test('an empty file, a text file, a folder without event files, a missing path: clear errors, nothing written', () => {
    const dir = tempDir('rlprobe-tb-bad-');
    const empty = path.join(dir, 'events.out.tfevents.1700000000.host');
    writeFileSync(empty, '');
    const text = path.join(dir, 'train.log');
    writeFileSync(text, 'step:1 - actor/entropy:0.5 - critic/score/mean:0.25\n');
    const noEvents = path.join(dir, 'empty-dir');
    mkdirSync(noEvents);
    const target = outDir();
    throwsCode(() => importTensorboard(empty, target), 'RLPROBE_IMPORT_FAILED', new RegExp(`^${empty}: empty file: no event record; is this a TensorBoard event file\\?$`));
    throwsCode(
      () => importTensorboard(text, target),
      'RLPROBE_IMPORT_FAILED',
      new RegExp(`^${text}: byte 0: record length checksum mismatch \\(stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}\\): not a TFRecord file \\(a TensorBoard event file starts with a record header\\)$`),
    );
    throwsCode(() => importTensorboard(noEvents, target), 'RLPROBE_IMPORT_FAILED', /empty-dir: no events\.out\.tfevents\.\* file in it or below it; is this a TensorBoard log directory\?$/);
    throwsCode(() => importTensorboard(path.join(dir, 'missing'), target), 'RLPROBE_IO', /cannot read .*missing/);
    throwsCode(() => importTensorboard(dir, target), 'RLPROBE_IMPORT_FAILED', new RegExp(`^${dir}: its 1 event file holds no whole record$`));
    assert.equal(existsSync(target), false);
  });

  test('probe import tensorboard --help: usage with examples', async () => {
    const help = await runCli(['import', 'tensorboard', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /\$ probe import tensorboard .*<source> <out>/);
    assert.match(help.stdout, /events\.out\.tfevents/);
    assert.match(help.stdout, /float32/);
  });
});
