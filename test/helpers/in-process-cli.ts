/** Runs `probe …` in this process: clipanion with captured stdout and stderr, no colour. */
import { Writable } from 'node:stream';

import { Cli } from 'clipanion';

import { buildCli } from '../../ts/cli/main.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function probe(args: string[]): Promise<CliResult> {
  let out = '';
  let err = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        append(chunk.toString());
        callback();
      },
    });
  const stdout = sink((s) => (out += s)) as unknown as NodeJS.WriteStream;
  const stderr = sink((s) => (err += s)) as unknown as NodeJS.WriteStream;
  const code = await buildCli().run(args, { ...Cli.defaultContext, stdout, stderr, colorDepth: 1 });
  return { code, stdout: out, stderr: err };
}
