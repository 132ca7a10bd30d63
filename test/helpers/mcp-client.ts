/**
 * `probe mcp` driven as an agent drives it: the real CLI (`node --import tsx ts/cli/bin.ts
 * mcp …`) spawned by the SDK's StdioClientTransport, spoken to by the SDK's Client. Every
 * successful tool answer is checked here against the tool's listed output schema (JSON
 * Schema, with the SDK's own Ajv validator, independently of the check the Client makes)
 * and against the byte budget.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { PassThrough } from 'node:stream';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

import { REPO_ROOT } from './child.js';

export const BIN = path.join(REPO_ROOT, 'ts', 'cli', 'bin.ts');
/** tsx by absolute URL: the server's working directory is a test's temporary directory. */
const TSX = import.meta.resolve('tsx');
export const DEFAULT_BUDGET = 32 * 1024;

export interface McpSession {
  client: Client;
  tools: Tool[];
  /** What the server wrote on stderr so far. */
  stderr(): string;
  /** Errors the transport saw (a line on stdout that is not a protocol message would be one). */
  transportErrors: Error[];
  /** Calls a tool; a successful answer is checked against its output schema and the budget. */
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

/** The bytes an answer costs, as the server counts them: its text plus its structured content as JSON. */
export function answerBytes(r: CallToolResult): number {
  const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  return Buffer.byteLength(text) + (r.structuredContent === undefined ? 0 : Buffer.byteLength(JSON.stringify(r.structuredContent)));
}

export function textOf(r: CallToolResult): string {
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/** Validators of each tool's listed output schema, by the SDK's Ajv provider. */
export function outputValidators(tools: Tool[]): Map<string, (value: unknown) => { valid: boolean; errorMessage?: string }> {
  const ajv = new AjvJsonSchemaValidator();
  const out = new Map<string, (value: unknown) => { valid: boolean; errorMessage?: string }>();
  for (const t of tools) {
    assert.ok(t.outputSchema, `${t.name} lists an output schema`);
    const validate = ajv.getValidator(t.outputSchema as never);
    out.set(t.name, (v) => validate(v));
  }
  return out;
}

export async function startMcp(cwd: string, args: string[], budget = DEFAULT_BUDGET): Promise<McpSession> {
  const stderr = new PassThrough();
  let errText = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', TSX, BIN, 'mcp', ...args],
    cwd,
    env: process.env as Record<string, string>,
    stderr: 'pipe',
  });
  const transportErrors: Error[] = [];
  const client = new Client({ name: 'rlprobe-test', version: '0.0.0' });
  client.onerror = (e) => transportErrors.push(e);
  await client.connect(transport);
  transport.stderr?.pipe(stderr);
  stderr.on('data', (chunk: Buffer) => {
    errText += chunk.toString();
  });
  const { tools } = await client.listTools();
  const validators = outputValidators(tools);
  return {
    client,
    tools,
    stderr: () => errText,
    transportErrors,
    async call(name, toolArgs) {
      const r = (await client.callTool({ name, arguments: toolArgs })) as CallToolResult;
      const bytes = answerBytes(r);
      assert.ok(bytes <= budget, `${name} answered ${bytes} bytes, over the budget of ${budget}`);
      if (!r.isError) {
        assert.ok(r.structuredContent, `${name} answered structured content`);
        const check = validators.get(name)!(r.structuredContent);
        assert.ok(check.valid, `${name}: structured content does not match its output schema: ${check.errorMessage}`);
      }
      return r;
    },
    async close() {
      await client.close();
    },
  };
}

/** The answer, asserting it is not an error (its text in the message when it is). */
export function ok(r: CallToolResult, what: string): Record<string, any> {
  assert.ok(!r.isError, `${what}: tool error: ${textOf(r)}`);
  return r.structuredContent as Record<string, any>;
}

/** The error text, asserting the answer is an error. */
export function refused(r: CallToolResult, what: string): string {
  assert.equal(r.isError, true, `${what}: expected a tool error, got ${JSON.stringify(r.structuredContent)?.slice(0, 500)}`);
  return textOf(r);
}
