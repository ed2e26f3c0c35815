/**
 * Preloaded into the service by bench/load/mixed.ts (`node --expose-gc
 * --import ./bench/load/heap-probe.ts server/main.ts`): every 10 s a full garbage
 * collection, then one line `heap-probe {...}` with what the heap still holds. The heap
 * retained after a full GC is the measure of a leak; RSS also moves with how far V8 has
 * let the heap grow. Each probe pauses the service for one full GC (tens of ms).
 */
const gc = (globalThis as { gc?: () => void }).gc;
const mb = (n: number) => Math.round((n / 2 ** 20) * 10) / 10;
if (gc) {
  setInterval(() => {
    gc();
    const m = process.memoryUsage();
    process.stdout.write(
      `heap-probe ${JSON.stringify({ heapUsedMb: mb(m.heapUsed), heapTotalMb: mb(m.heapTotal), externalMb: mb(m.external), rssMb: mb(m.rss) })}\n`,
    );
  }, 10_000).unref();
}
