/**
 * The chart state of the runs being looked at: built on first request, grown by polls,
 * the least recently used dropped past `maxRuns` (each holds O(buckets × columns) numbers,
 * about 2 MB for 47 columns). A build in flight is shared by every request for that run.
 */
import { LiveCharts } from './live-charts.js';
import type { RunEntry } from './run-entry.js';

/** How often at most a run whose steps cannot simply be followed is built again. */
const REBUILD_GAP_MS = 10_000;

export class ChartsCache {
  private readonly built = new Map<string, Promise<LiveCharts>>();
  private readonly lastRebuild = new Map<string, number>();
  /** Builds, follows that grew, rebuilds, and follows that failed: reported in /api/runs (`server`). */
  readonly counts = { builds: 0, follows: 0, rebuilds: 0, failures: 0 };

  /** Runs whose last follow was put off (a rebuild too soon after the last) or failed: followed again on the next look. */
  private readonly behind = new Set<string>();

  constructor(
    private readonly buckets: number,
    private readonly maxRuns: number,
    /** Runs an open page shows: never dropped, or their charts would stop without a sign. */
    private readonly watched: () => ReadonlySet<string> = () => new Set(),
  ) {}

  /** The run's charts, built now when not held. */
  of(entry: RunEntry): Promise<LiveCharts> {
    const held = this.built.get(entry.key);
    if (held) {
      // most recently used last
      this.built.delete(entry.key);
      this.built.set(entry.key, held);
      return held;
    }
    if (entry.reader === null) return Promise.reject(new Error(`run ${entry.shownPath} cannot be read: ${entry.error ?? 'not read yet'}`));
    const reader = entry.reader;
    this.counts.builds++;
    const building = LiveCharts.open(reader, this.buckets);
    this.built.set(entry.key, building);
    building.catch(() => this.built.delete(entry.key));
    this.evict(entry.key);
    return building;
  }

  /** Drops the least recently used charts past `maxRuns`, never those of a run a page shows nor `keep` (just asked for). */
  private evict(keep: string): void {
    if (this.built.size <= this.maxRuns) return;
    const watched = this.watched();
    for (const key of this.built.keys()) {
      if (this.built.size <= this.maxRuns) return;
      if (key !== keep && !watched.has(key)) this.drop(key);
    }
  }

  /** Whether the run's charts missed rows a look saw (follow them even if nothing changed since). */
  isBehind(key: string): boolean {
    return this.behind.has(key);
  }

  held(key: string): boolean {
    return this.built.has(key);
  }

  drop(key: string): void {
    this.built.delete(key);
    this.lastRebuild.delete(key);
    this.behind.delete(key);
  }

  /**
   * Adds what the run gained since its charts were read. Resolves to the charts when they
   * changed (grown or rebuilt), else null. Never rejects: a failed read is tried next poll.
   */
  async follow(entry: RunEntry): Promise<LiveCharts | null> {
    const held = this.built.get(entry.key);
    if (!held || entry.reader === null) return null;
    try {
      const charts = await held;
      const result = charts.follow(entry.reader);
      if (result === 'same') {
        this.behind.delete(entry.key);
        return null;
      }
      if (result === 'grew') {
        this.behind.delete(entry.key);
        this.counts.follows++;
        return charts;
      }
      const now = Date.now();
      if (now - (this.lastRebuild.get(entry.key) ?? 0) < REBUILD_GAP_MS) {
        this.behind.add(entry.key);
        return null;
      }
      this.lastRebuild.set(entry.key, now);
      this.counts.rebuilds++;
      await charts.rebuild(entry.reader);
      this.behind.delete(entry.key);
      return charts;
    } catch {
      // a read failed (files moving under a compaction, a damaged part): tried again next look
      this.behind.add(entry.key);
      this.counts.failures++;
      return null;
    }
  }
}
