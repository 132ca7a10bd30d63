/**
 * What a tool of `probe mcp` is: a name, a description an agent reads to choose it, zod
 * schemas for its arguments and its structured answer, and the function that answers. The
 * server (server.ts) registers them alike: errors become tool errors, and an answer over
 * the byte budget is never sent.
 */
import type { z } from 'zod';

import type { ToolAnswer } from './budget.js';
import type { RunRoots } from './roots.js';

export interface ToolContext {
  roots: RunRoots;
  /** Bytes an answer may take (text plus structured content). */
  budget: number;
  /** A line for the server's stderr (stdout is the protocol). */
  log: (line: string) => void;
}

export interface ToolSpec<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  run(args: z.output<I>, ctx: ToolContext): ToolAnswer<z.output<O>> | Promise<ToolAnswer<z.output<O>>>;
}

/** A tool, its types checked: the answer's structured content has the output schema's type. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(spec: ToolSpec<I, O>): ToolSpec<I, O> {
  return spec;
}
