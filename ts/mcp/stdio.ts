/**
 * Serving over stdio: stdout carries the protocol and nothing else, so everything that
 * could print on it (console.log in a dependency, a trajectory parser) is sent to stderr
 * before the transport starts.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

import { createServer } from './server.js';
import type { ServerOptions } from './server.js';

/** Serves until stdin closes (the client went away) or SIGINT/SIGTERM; resolves then. */
export async function serveStdio(options: ServerOptions = {}): Promise<void> {
  const log = options.log ?? ((l: string) => process.stderr.write(`probe mcp: ${l}\n`));
  for (const method of ['log', 'info', 'debug', 'warn'] as const) {
    console[method] = (...args: unknown[]) => console.error(...args);
  }
  const { server, context } = createServer({ ...options, log });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  const stop = () => void server.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // the client ending stdin ends the session
  process.stdin.once('end', stop);
  await server.connect(transport);
  log(`serving runs under ${context.roots.list().join(', ')} (answers up to ${context.budget} bytes)`);
  try {
    await closed;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
