/** Waiting: a plain sleep, and polling until a condition holds. */

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes (then returns the last value). */
export async function eventually<T>(fn: () => Promise<T>, timeoutMs: number, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    try {
      last = await fn();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await sleep(everyMs);
      continue;
    }
    if (last || Date.now() >= deadline) return last;
    await sleep(everyMs);
  }
}
