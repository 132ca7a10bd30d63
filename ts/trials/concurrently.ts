/**
 * Bounded concurrency for copying many files. One file at a time waits for each open, read,
 * write and fsync in turn; a few in flight let the file system overlap them (and group the
 * fsyncs into one journal commit), which is what makes 50,000 small files cost about what
 * `cp -r` costs instead of one round trip per step per file.
 */

/** Files copied at once: enough to overlap the work, few enough to bound open descriptors and buffers. */
export const COPY_CONCURRENCY = 16;

/**
 * `fn` over `items` with at most `limit` calls in flight; results in the order of `items`.
 * A throw stops new calls from starting and is rethrown once those in flight have settled.
 */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async (): Promise<void> => {
    while (next < items.length && failure === null) {
      const i = next++;
      try {
        out[i] = await fn(items[i], i);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== null) throw (failure as { error: unknown }).error;
  return out;
}
