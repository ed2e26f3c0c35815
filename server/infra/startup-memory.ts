/**
 * Start-up leaves the heap sized for start-up: loading the service's modules fills the young
 * generation, whose survivors grow it to its full 2 × 16 MiB (npm start's
 * `--max-semi-space-size`), and leaves garbage in the old one. An idle instance kept all of it
 * (still 2 × 16 MiB after 40 s idle, measured). One memory-reducing full collection once the
 * service is up hands it back to the system (~30 MiB); the young generation grows again under
 * load, as far as the start script lets it.
 *
 * V8 offers that collection only through its `gc` extension: it is switched on for one new
 * context, the function taken from it and the switch turned off again, so no global `gc`
 * exists (jest's leak detector reaches it the same way).
 */
import v8 from 'node:v8';
import vm from 'node:vm';

type GcOptions = { type: 'major'; execution: 'sync'; flavor: 'last-resort' };

function gcFunction(): (options: GcOptions) => void {
  v8.setFlagsFromString('--expose-gc');
  try {
    return vm.runInNewContext('gc') as (options: GcOptions) => void;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
}

/** Runs the collection; returns how long it held the event loop (ms). */
export function releaseStartupMemory(): number {
  const started = performance.now();
  gcFunction()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return performance.now() - started;
}
