/**
 * A thread's bodies stored in runs as the body parser makes them: one statement's JSON parameter
 * (and the event loop's turn that builds it) holds about a megabyte, not the whole thread (a
 * hundred messages of hundreds of kilobytes each were one parameter of ~19 MB and a stall of
 * ~150 ms), and no one holds the thread's bodies at once: neither the parser's worker nor the
 * event loop, which let a run go once it is stored (a 25 MB answer's messages held whole were
 * ~40 MiB of the event loop's heap while the thread was parsed).
 */

/** Bytes of bodies one statement carries, about (a message's bodies are never split). */
export const BODY_BYTES_PER_STATEMENT = 1 << 20;

/**
 * Rows stored in runs as they come: `add` queues a row, and a run is stored once its bodies reach
 * `max` by `size` (so it exceeds `max` by one message at most), while the next one fills; `end`
 * stores the rest and waits for every store. Runs are stored one after another, in order; once
 * one fails, the rows after it are dropped and `end` fails with its error.
 */
export function bodyRuns<T>(
  store: (rows: T[]) => Promise<void>,
  size: (row: T) => number,
  max = BODY_BYTES_PER_STATEMENT,
) {
  let run: T[] = [];
  let filled = 0;
  let stored: Promise<void> = Promise.resolve();
  const flush = () => {
    if (!run.length) return;
    const rows = run;
    run = [];
    filled = 0;
    stored = stored.then(() => store(rows));
    stored.catch(() => {}); // heard by `end`
  };
  return {
    add(row: T): void {
      run.push(row);
      filled += size(row);
      if (filled >= max) flush();
    },
    end(): Promise<void> {
      flush();
      return stored;
    },
  };
}
