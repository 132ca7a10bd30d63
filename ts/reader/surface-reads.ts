import { RlprobeError } from '../errors.js';

/** A part of a recording that could not be read, with the error (which names the file). */
export interface DamagedSurface {
  surface: string;
  error: string;
}

/**
 * Reads the parts of a recording (steps, samples, spans, events, trials) one at a time,
 * so one damaged part is reported instead of hiding the others (`probe info`, `probe
 * report`). Only RlprobeErrors are caught: they name the file and what is wrong; anything
 * else is a bug and still throws. Once a part has failed, its further reads are skipped.
 */
export class SurfaceReads {
  readonly damaged: DamagedSurface[] = [];

  isDamaged(surface: string): boolean {
    return this.damaged.some((d) => d.surface === surface);
  }

  /** Records `surface` as damaged (a file listing found it so) unless it already is. */
  mark(surface: string, error: string): void {
    if (!this.isDamaged(surface)) this.damaged.push({ surface, error });
  }

  /** `read()`, or `fallback` when `surface` is damaged (now or before). */
  attempt<T>(surface: string, fallback: T, read: () => T): T {
    if (this.isDamaged(surface)) return fallback;
    try {
      return read();
    } catch (error) {
      if (!(error instanceof RlprobeError)) throw error;
      this.mark(surface, error.message);
      return fallback;
    }
  }

  /** `attempt` for an asynchronous read. */
  async attemptAsync<T>(surface: string, fallback: T, read: () => Promise<T>): Promise<T> {
    if (this.isDamaged(surface)) return fallback;
    try {
      return await read();
    } catch (error) {
      if (!(error instanceof RlprobeError)) throw error;
      this.mark(surface, error.message);
      return fallback;
    }
  }
}
