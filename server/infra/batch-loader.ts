/**
 * Batching of per-request database reads and writes across concurrent requests (DataLoader),
 * with one batch in flight at a time: the first load of a quiet moment leaves on the next
 * tick (with whatever arrived in the same tick); loads that arrive while a batch is in
 * flight wait and leave together as the next batch when it returns. Alone, a request waits
 * for no timer; under load, batches grow with the concurrency and statements per request
 * fall. No caching: every load is answered by a statement that started after it.
 */
import DataLoader from 'dataloader';

export type BatchFn<K, V> = (keys: readonly K[]) => Promise<readonly (V | Error)[]>;

export function oneInFlightLoader<K, V>(batch: BatchFn<K, V>, opts: { maxBatchSize?: number } = {}): DataLoader<K, V> {
  let inFlight = false;
  const waiting: (() => void)[] = [];
  const run: BatchFn<K, V> = async (keys) => {
    inFlight = true;
    try {
      return await batch(keys);
    } finally {
      inFlight = false;
      waiting.shift()?.();
    }
  };
  return new DataLoader<K, V>(run, {
    cache: false,
    maxBatchSize: opts.maxBatchSize ?? 500,
    batchScheduleFn: (dispatch) => {
      if (inFlight) waiting.push(dispatch);
      else process.nextTick(dispatch);
    },
  });
}
