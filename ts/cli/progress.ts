/**
 * Progress for long commands: a redrawn bar on a TTY, plain lines otherwise (logs, CI,
 * pipes), so a captured log reads well and a terminal does not scroll.
 */
import type { Writable } from 'node:stream';

import { terminalLine } from './terminal-text.js';

export class Progress {
  private readonly tty: boolean;
  private drawn = false;

  constructor(private readonly out: Writable & { isTTY?: boolean; columns?: number }, private readonly label: string) {
    this.tty = out.isTTY === true;
  }

  update(done: number, total: number, detail: string): void {
    detail = terminalLine(detail); // it can name a directory of the run
    if (!this.tty) {
      this.out.write(`${this.label} ${done}/${total} ${detail}\n`);
      return;
    }
    const width = 24;
    const filled = total > 0 ? Math.round((done / total) * width) : width;
    const bar = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
    const line = `${this.label} ${bar} ${done}/${total} ${detail}`;
    // a pseudo-terminal can report 0 columns: treat it as unknown, not as no room
    const cols = this.out.columns || 100;
    this.out.write(`\r${line.slice(0, cols - 1).padEnd(Math.min(cols - 1, line.length))}\x1b[K`);
    this.drawn = true;
  }

  /** Ends the bar's line (TTY only), so the next output starts clean. */
  done(): void {
    if (this.tty && this.drawn) this.out.write('\n');
  }
}
