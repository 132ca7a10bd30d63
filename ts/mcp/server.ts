/**
 * `probe mcp`: a read-only Model Context Protocol server over the runs under its roots, for
 * coding agents (Claude Code, Cursor, Codex, VS Code). Every tool answers with text and
 * structured content held to the byte budget; a refusal (a path outside the roots, a bad
 * cursor, a run that cannot be read) is a tool error the agent reads, never a crash.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { RlprobeError } from '../errors.js';
import { VERSION } from '../version.js';
import { answerBytes, DEFAULT_BUDGET_BYTES } from './budget.js';
import { registerResources } from './resources.js';
import { RunRoots } from './roots.js';
import { line } from './text.js';
import type { ToolContext, ToolSpec } from './tool.js';
import { ToolError } from './tool-error.js';
import { diagnose } from './tools/diagnose.js';
import { diff } from './tools/diff.js';
import { listRuns } from './tools/list-runs.js';
import { runInfo } from './tools/run-info.js';
import { sample } from './tools/sample.js';
import { samples } from './tools/samples.js';
import { series } from './tools/series.js';
import { spanTree } from './tools/span-tree.js';
import { trial } from './tools/trial.js';
import { trials } from './tools/trials.js';

/** Every tool, in the order an agent meets them. */
export const TOOLS: readonly ToolSpec[] = [listRuns, runInfo, diagnose, series, samples, sample, spanTree, trials, trial, diff] as unknown as ToolSpec[];

/** Characters of an error message sent back (a message can quote a long value). */
const ERROR_CHARS = 4000;

const INSTRUCTIONS = `rlprobe records reinforcement-learning fine-tuning runs of language models (GRPO, PPO): per-step metrics, samples (rollouts with rewards), spans (rollout → turn → tool_call trees) and captured Harbor trials. This server reads them, read-only.
Start with list_runs; diagnose says what went wrong and from which step; series shows metrics around it; samples (around_finding = a finding's code) and sample show the rollouts; span_tree shows a rollout's turns and tool calls; trials and trial show captured agent trials; diff compares two runs.
Answers are held to ${'{budget}'} bytes: when next_cursor is not null, call the same tool with the same arguments and cursor = next_cursor for more.`;

export interface ServerOptions {
  /** Directories runs may be read from (default: the working directory). */
  roots?: readonly string[];
  /** Bytes an answer may take (default DEFAULT_BUDGET_BYTES). */
  budget?: number;
  cwd?: string;
  /** Where log lines go (default: stderr; stdout is the protocol). */
  log?: (line: string) => void;
}

function errorResult(message: string): CallToolResult {
  const text = message.length > ERROR_CHARS ? `${message.slice(0, ERROR_CHARS)}… [cut at ${ERROR_CHARS} of ${message.length} chars]` : message;
  return { content: [{ type: 'text', text: line(text) }], isError: true };
}

export function createServer(options: ServerOptions = {}): { server: McpServer; context: ToolContext } {
  const cwd = options.cwd ?? process.cwd();
  const budget = options.budget ?? DEFAULT_BUDGET_BYTES;
  const log = options.log ?? ((l: string) => process.stderr.write(`probe mcp: ${l}\n`));
  const context: ToolContext = { roots: new RunRoots(options.roots?.length ? options.roots : [cwd], cwd), budget, log };
  const server = new McpServer(
    { name: 'rlprobe', title: 'rlprobe: RL fine-tuning runs', version: VERSION },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS.replace('{budget}', String(budget)) },
  );
  for (const tool of TOOLS) {
    const handler = async (args: Record<string, unknown>): Promise<CallToolResult> => {
      const started = performance.now();
      try {
        const answer = await tool.run(args, context);
        const bytes = answerBytes(answer);
        // the budget is a promise to the agent: an answer over it is a bug, never sent
        if (bytes > budget) {
          log(`${tool.name} built an answer of ${bytes} bytes, over the budget of ${budget} (a bug in probe mcp; please report it with the arguments ${JSON.stringify(args)})`);
          return errorResult(`internal error: the answer (${bytes} bytes) is over the byte budget of ${budget}; this is a bug in probe mcp`);
        }
        log(`${tool.name} ${bytes} bytes in ${Math.round(performance.now() - started)} ms`);
        return { content: [{ type: 'text', text: answer.text }], structuredContent: answer.structured };
      } catch (error) {
        if (error instanceof ToolError || error instanceof RlprobeError) return errorResult(error.message);
        const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
        log(`internal error in ${tool.name} (a bug in probe mcp; please report it with this trace):\n${text}`);
        return errorResult(`internal error in probe mcp (a bug; the server's stderr has the trace): ${error instanceof Error ? error.message : String(error)}`);
      }
    };
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: tool.output, annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false } },
      handler as never,
    );
  }
  registerResources(server, context);
  return { server, context };
}
