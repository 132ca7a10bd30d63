import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';
import type { ImportFormat } from './import-exec.js';

const SHARED_DETAILS =
  'Writes a normal recording (read it with `probe info` and every other command) into OUT, which must not exist or be empty. ' +
  'The source file is only read; its path, SHA-256 and the printing resolution of rounded values are kept in the manifest ' +
  '(`extra.source`). Metrics without a StepRecord field land in `extra.<original name>`, held-out ones (`val/…`, `eval_…`) included.';

/** The shared arguments and output of the import commands. */
abstract class ImportCommand extends ProbeCommand {
  source = Option.String({ name: 'source' });
  out = Option.String({ name: 'out' });
  algorithm = valueOption('--algorithm', { value: 'NAME', description: 'Algorithm for the manifest (grpo, ppo, …) instead of the one inferred' });
  json = Option.Boolean('--json', false, { description: 'Print a JSON summary instead of text' });

  /** Which importer (import-exec.ts) reads the source. */
  abstract readonly importer: ImportFormat;

  async exec(): Promise<number> {
    const { execImport } = await import('./import-exec.js');
    return execImport(this.importer, this);
  }
}

export class ImportTrlCommand extends ImportCommand {
  static paths = [['import', 'trl']];
  static usage = Command.Usage({
    description: 'Import a TRL (Hugging Face Trainer) trainer_state.json: GRPO or PPO metrics, eval metrics merged per step',
    details:
      `${SHARED_DETAILS} The final train_runtime/train_loss summary goes to \`extra.source.summary\`; the other top-level keys become the trainer config. ` +
      'TRL\'s own `val/…` statistics (PPO ratio variance, EOS counts: no validation) become `extra.trl/val/…`.',
    examples: [
      ['Import a GRPO run', '$0 import trl outputs/checkpoint-500/trainer_state.json runs/grpo-imported'],
      ['The same, JSON summary', '$0 import trl outputs/trainer_state.json runs/grpo-imported --json'],
    ],
  });

  readonly importer = 'trl';
}

export class ImportVerlCommand extends ImportCommand {
  static paths = [['import', 'verl']];
  static usage = Command.Usage({
    description: 'Import a verl log: console output (step:N - key:value …) or the file backend\'s JSON Lines',
    details: `${SHARED_DETAILS} Console values printed with 3 decimals get resolution 0.001; lines that are neither format are skipped and counted.`,
    examples: [
      ['Import a captured console log', '$0 import verl logs/train.log runs/verl-imported'],
      ['Import the file backend (VERL_FILE_LOGGER_PATH)', '$0 import verl metrics.jsonl runs/verl-imported --algorithm grpo'],
    ],
  });

  readonly importer = 'verl';
}

export class ImportJsonlCommand extends ImportCommand {
  static paths = [['import', 'jsonl']];
  static usage = Command.Usage({
    description: 'Import any JSON Lines metrics log, mapped onto step columns by a map file',
    details:
      `${SHARED_DETAILS} map.json: {"step": "<key or dotted path>", "columns": {"<source key>": "<StepRecord field | reward_component.X | extra.X>"}, ` +
      '"resolution": {"<source key>": 0.001}, "algorithm": "grpo", "nulls": "missing" | "nan", "kl_per_token": true}; only "step" is required. ' +
      'Lines without a step are skipped and counted; a step that is not a non-negative integer is an error naming the line.',
    examples: [['Import with a map', '$0 import jsonl metrics.jsonl runs/imported --map map.json']],
  });

  map = valueOption('--map', { value: 'MAP', required: true, description: 'The map file (JSON): step key, column mapping, resolution, algorithm' });

  readonly importer = 'jsonl';
}

export class ImportTensorboardCommand extends ImportCommand {
  static paths = [['import', 'tensorboard']];
  static usage = Command.Usage({
    description: 'Import TensorBoard event files (a log directory or one events.out.tfevents.* file): TRL and verl tags mapped onto step columns',
    details:
      `${SHARED_DETAILS} Scalars by tag, step and wall time (a step's timestamp is the wall time of its first scalar). ` +
      'TRL (transformers\' TensorBoardCallback) logs its metrics as `train/<name>`, mapped as `probe import trl` maps `<name>` ' +
      '(the closing train_runtime… figures go to `extra.source.summary`), and eval metrics as `eval/<name>` (`extra.eval/<name>`); ' +
      'verl\'s tags are its metric names, mapped as `probe import verl` maps them; any other tag lands in `extra.<tag>`. ' +
      'A scalar is a `simple_value` (float32: kept as that float32 widened to float64, 0.1 is 0.10000000149011612) or a one-element ' +
      'tensor of the scalars plugin (its own dtype). Histograms, images and text are skipped and counted per tag. ' +
      'A directory: every events.out.tfevents.* file under it, merged by step (a later writer wins a tag and step, with a warning); ' +
      'folders that share tags are several runs and are refused: name one folder. Both TFRecord checksums are verified: ' +
      'a mismatch is an error naming the file and byte offset; a torn last record (a writer that crashed) is read up to the tear, with a warning on stderr.',
    examples: [
      ['Import a TRL run (transformers logs to output_dir/runs/<date>_<host>)', '$0 import tensorboard outputs/runs/May12_10-00-00_gpu1 runs/trl-tb'],
      ['Import a verl run (its TensorBoard backend logs to tensorboard_log/<project>/<experiment>)', '$0 import tensorboard tensorboard_log/gsm8k/qwen-grpo runs/verl-tb --algorithm grpo'],
      ['One event file, JSON summary', '$0 import tensorboard logs/events.out.tfevents.1715500000.gpu1.4242.0 runs/tb --json'],
    ],
  });

  readonly importer = 'tensorboard';
}
