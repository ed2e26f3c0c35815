/**
 * Preloaded into the live-events bench server (bench/run/events.phase.ts): on SIGUSR2, a full
 * garbage collection (the start script gives --expose-gc), then `process.memoryUsage()` written
 * as JSON to MIA_BENCH_HEAP_FILE. The bench reads the heap the open streams retain, not what
 * V8 has yet to collect.
 */
import { writeFileSync } from 'node:fs';

const file = process.env.MIA_BENCH_HEAP_FILE;
const gc = (globalThis as { gc?: () => void }).gc;
if (file) {
  process.on('SIGUSR2', () => {
    gc?.();
    gc?.();
    const m = process.memoryUsage();
    writeFileSync(
      file,
      JSON.stringify({
        at: Date.now(),
        gc: Boolean(gc),
        rss: m.rss,
        heapUsed: m.heapUsed,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
      }),
    );
  });
}
