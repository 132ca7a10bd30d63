import { Command, Option } from 'clipanion';

import { importJsonl } from '../../import/jsonl.js';
import { importTrl } from '../../import/trl.js';
import { importVerl } from '../../import/verl.js';
import type { ImportResult } from '../../import/write-import.js';
import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';
import { terminalLine } from '../terminal-text.js';

const SHARED_DETAILS =
  'Writes a normal recording (read it with `probe info` and every other command) into OUT, which must not exist or be empty. ' +
  'The source file is only read; its path, SHA-256 and the printing resolution of rounded values are kept in the manifest ' +
  '(`extra.source`). Metrics without a StepRecord field land in `extra.<original name>`, held-out ones (`val/…`, `eval_…`) included.';

/** The shared arguments and output of the three import commands. */
abstract class ImportCommand extends ProbeCommand {
  source = Option.String({ name: 'source' });
  out = Option.String({ name: 'out' });
  algorithm = valueOption('--algorithm', { value: 'NAME', description: 'Algorithm for the manifest (grpo, ppo, …) instead of the one inferred' });
  json = Option.Boolean('--json', false, { description: 'Print a JSON summary instead of text' });

  abstract runImport(): ImportResult;

  async exec(): Promise<number> {
    const r = this.runImport();
    if (this.json) {
      this.context.stdout.write(`${JSON.stringify(r)}\n`);
      return 0;
    }
    const rounded = Object.keys(r.resolution).length;
    const line =
      `imported ${r.rows} row${r.rows === 1 ? '' : 's'} (steps ${r.first_step} … ${r.last_step}, ${r.columns.length} columns` +
      `${rounded ? `, ${rounded} printed rounded` : ''}) from ${r.source} into ${r.out_dir} (${r.format}, algorithm ${r.algorithm}); ` +
      `${r.skipped_lines} line${r.skipped_lines === 1 ? '' : 's'} skipped`;
    this.context.stdout.write(`${terminalLine(line)}\n`);
    return 0;
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

  runImport(): ImportResult {
    return importTrl(this.source, this.out, { algorithm: this.algorithm });
  }
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

  runImport(): ImportResult {
    return importVerl(this.source, this.out, { algorithm: this.algorithm });
  }
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

  runImport(): ImportResult {
    return importJsonl(this.source, this.out, { map: this.map, algorithm: this.algorithm });
  }
}
