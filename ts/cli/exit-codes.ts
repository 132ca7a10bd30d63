/**
 * The exit codes of every `probe` command (the table in docs/cli.md): a script or a CI job
 * can tell "the command line is wrong" from "probe could not do it" from "it did, and
 * found a problem".
 */
export const EXIT_CODES = {
  ok: 0,
  /** probe could not do it: not a run, a damaged file, an IO error, a sample not found, … */
  failure: 1,
  /** It worked and found what it was asked to gate on: `doctor --fail-on`, a `watch` halt. */
  findings: 2,
  /** EX_USAGE (sysexits.h): unknown command or option, a missing argument, a bad option value. */
  usage: 64,
} as const;
