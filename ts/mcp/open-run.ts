/** A run named by a tool argument, through the root guard, opened for reading. */
import { RunReader } from '../reader/run-reader.js';
import type { ToolContext } from './tool.js';

export interface OpenedRun {
  reader: RunReader;
  /** How the run is shown and given back to the agent (relative to the working directory when under it). */
  path: string;
}

/** Throws ToolError for a path the roots refuse, RlprobeError for a directory that is not a run. */
export function openRun(ctx: ToolContext, runPath: string, field = 'run'): OpenedRun {
  const real = ctx.roots.resolve(runPath, field);
  return { reader: RunReader.open(real), path: ctx.roots.display(real) };
}
