#!/usr/bin/env node
import { main } from './main.js';

// `probe samples … | head`: a closed pipe ends the output, not the process with a trace
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`probe: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
