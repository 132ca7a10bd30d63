/**
 * The runs as MCP resources: for each run under the roots `rlprobe://run/<path>/manifest.json`,
 * `…/report.md` (the Markdown report) and `…/findings.json` (the doctor's diagnosis), listed
 * and readable; and templates for one captured trial (`…/trials/<capture>`) and one span's
 * tree (`…/spans/<span_id>`), which answer as the trial and span_tree tools do. `<path>` is
 * the run's path as list_runs gives it, each segment percent-encoded. Every resource is
 * held to the byte budget, cut with a marker when longer.
 */
import { ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';

import { diagnose } from '../doctor/diagnose.js';
import { buildReport } from '../report/build-report.js';
import { renderMarkdown } from '../report/markdown.js';
import { boundJson, jsonSafe } from './clip.js';
import { openRun } from './open-run.js';
import { findRuns } from '../reader/run-finder.js';
import type { ToolContext } from './tool.js';
import { spanTree } from './tools/span-tree.js';
import { trial } from './tools/trial.js';

const PREFIX = 'rlprobe://run/';

/** `rlprobe://run/<path>/<leaf>`, each segment of the path percent-encoded. */
export function runUri(runPath: string, leaf: string): string {
  return `${PREFIX}${runPath.split('/').map(encodeURIComponent).join('/')}/${leaf}`;
}

function variable(value: string | string[] | undefined, name: string): string {
  const v = Array.isArray(value) ? value.join(',') : value;
  if (v === undefined || v === '') throw new Error(`resource URI without a ${name}`);
  return decodeURIComponent(v);
}

/** `text` within `budget` bytes, cut with a marker saying so. */
function bounded(text: string, budget: number): string {
  if (Buffer.byteLength(text) <= budget) return text;
  const marker = `\n… [cut at ${budget} bytes of ${Buffer.byteLength(text)}: the tools page through all of it]\n`;
  let cut = Buffer.from(text).subarray(0, budget - Buffer.byteLength(marker)).toString('utf8');
  // a character split by the byte cut decodes as U+FFFD: drop it
  if (cut.endsWith('\ufffd')) cut = cut.slice(0, -1);
  return cut + marker;
}

function json(uri: URL, value: unknown, budget: number): ReadResourceResult {
  return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(boundJson(jsonSafe(value), budget - 64).value, null, 1) }] };
}

interface RunLeaf {
  name: string;
  leaf: string;
  title: string;
  description: string;
  mimeType: string;
  read: (runPath: string, uri: URL) => Promise<ReadResourceResult> | ReadResourceResult;
}

export function registerResources(server: McpServer, ctx: ToolContext): void {
  const leaves: RunLeaf[] = [
    {
      name: 'run-manifest',
      leaf: 'manifest.json',
      title: 'Run manifest',
      description: 'manifest.json of a run: id, algorithm, model, trainer config, environment',
      mimeType: 'application/json',
      read: (runPath, uri) => json(uri, openRun(ctx, runPath).reader.manifest, ctx.budget),
    },
    {
      name: 'run-report',
      leaf: 'report.md',
      title: 'Run report (Markdown)',
      description: 'The Markdown report of a run: findings, headline series with sparklines, events (probe report --format md)',
      mimeType: 'text/markdown',
      read: async (runPath, uri) => {
        // the client reads it on this machine, not beside a saved file: absolute links
        const md = renderMarkdown(await buildReport(openRun(ctx, runPath).reader), { linkBase: null });
        return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: bounded(md, ctx.budget) }] };
      },
    },
    {
      name: 'run-findings',
      leaf: 'findings.json',
      title: 'Run findings',
      description: 'The doctor\'s diagnosis of a run as JSON (probe doctor --json)',
      mimeType: 'application/json',
      read: (runPath, uri) => json(uri, diagnose(openRun(ctx, runPath).reader), ctx.budget),
    },
  ];
  for (const l of leaves) {
    const template = new ResourceTemplate(`${PREFIX}{+run}/${l.leaf}`, {
      list: () => ({
        resources: findRuns(ctx.roots.list()).runs.map((real) => {
          const shown = ctx.roots.display(real);
          return { uri: runUri(shown, l.leaf), name: `${shown} ${l.leaf}`, title: `${l.title}: ${shown}`, mimeType: l.mimeType };
        }),
      }),
    });
    server.registerResource(l.name, template, { title: l.title, description: l.description, mimeType: l.mimeType }, (uri, vars) => l.read(variable(vars.run, 'run'), uri));
  }
  server.registerResource(
    'trial',
    new ResourceTemplate(`${PREFIX}{+run}/trials/{capture}`, { list: undefined }),
    { title: 'Captured trial', description: 'One captured Harbor trial, as the trial tool gives it', mimeType: 'application/json' },
    async (uri, vars) => {
      const answer = await trial.run({ run: variable(vars.run, 'run'), capture: variable(vars.capture, 'capture') }, ctx);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(answer.structured) }] };
    },
  );
  server.registerResource(
    'span',
    new ResourceTemplate(`${PREFIX}{+run}/spans/{span_id}`, { list: undefined }),
    { title: 'Span tree', description: 'A span and the spans under it (the first page of span_tree)', mimeType: 'application/json' },
    async (uri, vars) => {
      const answer = await spanTree.run({ run: variable(vars.run, 'run'), span_id: variable(vars.span_id, 'span_id') }, ctx);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(answer.structured) }] };
    },
  );
}
