/**
 * Server-Sent Events to the open pages: one stream per page, naming the runs it shows, so
 * a page never needs more than one of the browser's six connections per origin. Each
 * message is one `data:` line of JSON (JSON.stringify never writes a newline). A comment
 * every 15 s keeps proxies and idle timers from closing a quiet stream.
 */
import type { ServerResponse } from 'node:http';

const HEARTBEAT_MS = 15_000;
/** Bytes a stream may have waiting for its page before it is let go. */
const MAX_BUFFERED_BYTES = 4 << 20;

interface Client {
  res: ServerResponse;
  runs: ReadonlySet<string>;
}

export class EventHub {
  private readonly clients = new Set<Client>();
  private readonly heartbeat: NodeJS.Timeout;
  /** Messages written, for the tests and the closing figures. */
  sent = 0;
  /** Streams let go because their page stopped reading. */
  dropped = 0;

  constructor(private readonly encode: (value: unknown) => string) {
    this.heartbeat = setInterval(() => {
      for (const c of this.clients) if (c.res.writableLength <= MAX_BUFFERED_BYTES) c.res.write(': ping\n\n');
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** Opens a stream on `res` for `runs` (run keys); it ends when the page goes. */
  open(res: ServerResponse, runs: ReadonlySet<string>, hello: unknown): void {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    res.write('retry: 2000\n\n');
    const client: Client = { res, runs };
    this.clients.add(client);
    res.on('close', () => this.clients.delete(client));
    this.write(client, 'hello', hello);
  }

  /** Runs some open page shows. */
  watched(): Set<string> {
    const out = new Set<string>();
    for (const c of this.clients) for (const r of c.runs) out.add(r);
    return out;
  }

  /** To every page (`run` null), or to the pages showing `run`. */
  send(event: string, data: unknown, run: string | null = null): void {
    for (const c of this.clients) if (run === null || c.runs.has(run)) this.write(c, event, data);
  }

  get size(): number {
    return this.clients.size;
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const c of this.clients) c.res.end();
    this.clients.clear();
  }

  private write(c: Client, event: string, data: unknown): void {
    // a page that stopped reading (a frozen tab, a client that never reads) is let go rather
    // than buffered without end; a page that comes back reconnects and takes everything again
    if (c.res.writableLength > MAX_BUFFERED_BYTES) {
      this.dropped++;
      this.clients.delete(c);
      c.res.destroy();
      return;
    }
    c.res.write(`event: ${event}\ndata: ${this.encode(data)}\n\n`);
    this.sent++;
  }
}
