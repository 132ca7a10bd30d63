/**
 * A tool call the server refuses for a reason the agent can act on (a path outside the
 * roots, a bad cursor, arguments that contradict each other): answered as a tool error
 * (`isError`), with this message, never as a crash of the server.
 */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}
