/**
 * Options declared with the name of their value and their default, for help: clipanion
 * prints an option's value as `#0` and no default (arcanis/clipanion#173), so
 * `--steps FROM..TO` and `[default: 50]` come from here.
 *
 * `valueOption` / `listOption` record the value name on the option's definition;
 * `nameOptionValues` makes a command's usage print it (ProbeCli calls it for every command,
 * so an option declared with plain `Option.String` still reads `VALUE`, never `#0`).
 */
import { Option } from 'clipanion';
import type { StrictValidator } from 'typanion';

/** What help shows for a value nobody named. */
const UNNAMED_VALUE = 'VALUE';

interface OptionDefinitionEntry {
  names: string[];
  arity: number;
  /** Set by valueOption / listOption. */
  valueName?: string;
}

/** The part of clipanion's CommandBuilder this needs (core, not exported as a type). */
export interface UsageBuilder {
  options: OptionDefinitionEntry[];
  usage(opts?: { detailed?: boolean; inlineOptions?: boolean }): { usage: string; options: Array<{ definition: string; description: string; required: boolean }> };
}

interface OptionSpec {
  definition(builder: UsageBuilder, key: string): void;
}

/** `option` with `valueName` recorded on its definition. */
function withValueName<T>(option: T, valueName: string): T {
  const spec = option as unknown as OptionSpec;
  const define = spec.definition;
  return {
    ...spec,
    definition(builder: UsageBuilder, key: string) {
      define(builder, key);
      const entry = builder.options.at(-1);
      if (entry) entry.valueName = valueName;
    },
  } as unknown as T;
}

interface ValueSpec<T> {
  /** The value's name in help: `N`, `FROM..TO`, `KEY=VALUE`. */
  value: string;
  description: string;
  validator?: StrictValidator<unknown, T>;
}

/** `--limit N`: one value; its default (validated like any value) is shown in help. */
export function valueOption<T extends {} = string>(names: string, spec: ValueSpec<T> & { default: string }): T;
export function valueOption<T extends {} = string>(names: string, spec: ValueSpec<T> & { required: true }): T;
export function valueOption<T extends {} = string>(names: string, spec: ValueSpec<T>): T | undefined;
export function valueOption<T extends {} = string>(names: string, spec: ValueSpec<T> & { default?: string; required?: boolean }): T | undefined {
  const option =
    spec.default === undefined
      ? Option.String<T>(names, { description: spec.description, validator: spec.validator, required: spec.required === true })
      : Option.String<T>(names, spec.default, { description: `${spec.description} [default: ${spec.default}]`, validator: spec.validator });
  return withValueName(option, spec.value);
}

/** `--kind KIND`, repeatable: every value, in order (none: `[]`). */
export function listOption<T extends {} = string>(names: string, spec: { value: string; description: string; validator?: StrictValidator<unknown, T[]> }): T[] {
  return withValueName(Option.Array<T>(names, [], { description: `${spec.description} (repeatable)`, validator: spec.validator }), spec.value);
}

/** Makes `builder`'s usage print each option's value name instead of clipanion's `#0`. */
export function nameOptionValues(builder: UsageBuilder): void {
  const usage = builder.usage.bind(builder);
  const rename = (text: string): string => {
    for (const o of builder.options) {
      if (o.arity !== 1) continue;
      text = text.split(`${o.names.join(',')} #0`).join(`${o.names.join(',')} ${o.valueName ?? UNNAMED_VALUE}`);
    }
    return text;
  };
  // an own property: the usage lines of help, of errors and of "did you mean" all come from it
  builder.usage = (opts) => {
    const u = usage(opts);
    return { usage: rename(u.usage), options: u.options.map((o) => ({ ...o, definition: rename(o.definition) })) };
  };
}
