import { statSync } from 'node:fs';

import { Command, UsageError } from 'clipanion';

import { DEFAULT_BUDGET_BYTES, MIN_BUDGET_BYTES } from '../../mcp/budget.js';
import { ProbeCommand } from '../base-command.js';
import { listOption, valueOption } from '../named-options.js';
import { optionValue } from '../option-values.js';

const isBudget = optionValue(`an integer ≥ ${MIN_BUDGET_BYTES}`, (text) => {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(n) && n >= MIN_BUDGET_BYTES ? n : undefined;
});

export class McpCommand extends ProbeCommand {
  static paths = [['mcp']];
  static usage = Command.Usage({
    description: 'Serve the runs under the roots to a coding agent over the Model Context Protocol (stdio, read-only)',
    details: `
      Speaks MCP on stdin and stdout (logs go to stderr) until the client closes stdin. Tools:
      list_runs, run_info, diagnose, series, samples, sample, span_tree, trials, trial, diff;
      each run is also a resource (rlprobe://run/<path>/manifest.json, report.md, findings.json).
      Only runs inside a --root are read: a path outside them, or leading out through .. or a
      symbolic link, is refused. Every answer is held to --max-bytes (text and structured
      content together); longer ones page with a cursor. See docs/mcp.md.
    `,
    examples: [
      ['Serve the runs under runs/', '$0 mcp --root runs'],
      ['Add it to Claude Code', 'claude mcp add rlprobe -- npx probe mcp --root runs'],
    ],
  });

  roots = listOption('--root', { value: 'DIR', description: 'A directory the server may read runs from (default: the working directory)' });
  maxBytes = valueOption('--max-bytes', { value: 'N', description: 'Bytes an answer may take, text and structured content together', default: String(DEFAULT_BUDGET_BYTES), validator: isBudget });

  async exec(): Promise<number> {
    for (const root of this.roots) {
      let directory = false;
      try {
        directory = statSync(root).isDirectory();
      } catch {
        // named below
      }
      if (!directory) throw new UsageError(`invalid --root ${JSON.stringify(root)}: not a directory`);
    }
    // imported here: the MCP SDK (and its HTTP stack) loads only for `probe mcp`, not every command
    const { serveStdio } = await import('../../mcp/stdio.js');
    await serveStdio({ roots: this.roots, budget: this.maxBytes });
    return 0;
  }
}
