/**
 * Start-up leaves the heap sized for start-up: loading the service's modules fills the young
 * generation, whose survivors grow it to its full 2 × 16 MiB (npm start's
 * `--max-semi-space-size`), and leaves garbage in the old one. An idle instance kept all of it
 * (bench/results/HISTORY.md). One memory-reducing full collection once the
 * service is up hands it back to the system; the young generation grows again under load, as
 * far as the start script lets it.
 *
 * V8 offers that collection only through its `gc` extension, which Node's `--expose-gc` flag
 * defines as the global `gc`: npm start and the image's CMD pass it (test/deploy holds both to
 * it). Started without the flag, nothing is collected.
 */

/** Runs the collection; how long it held the event loop (ms), or null without `--expose-gc`. */
export function releaseStartupMemory(): number | null {
  const gc = globalThis.gc;
  if (!gc) return null;
  const started = performance.now();
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return performance.now() - started;
}
