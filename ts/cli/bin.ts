#!/usr/bin/env node
// `probe samples … | head`: a closed pipe ends the output, not the process with a trace
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

function report(error: unknown): void {
  // a missing native addon is the user's platform, not a bug: its message says what to do
  const missingAddon = (error as { code?: unknown })?.code === 'RLPROBE_NATIVE_MISSING';
  process.stderr.write(`probe: ${missingAddon ? (error as Error).message : ((error as Error)?.stack ?? String(error))}\n`);
  process.exitCode = 1;
}

// imported, not linked: a module that fails to load must reach report() (the native addon
// loads later, with the first command that needs it: ProbeCommand reports that one)
import('./main.js').then(
  ({ main }) =>
    main(process.argv.slice(2)).then((code) => {
      process.exitCode = code;
    }, report),
  report,
);
