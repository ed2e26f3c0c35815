/**
 * In-process single flight: while a task for a key runs, later callers for the same key
 * share its promise instead of starting their own. Across instances the database (the
 * unique key the task writes under) makes the results converge.
 */
export function createSingleFlight<T>() {
  const inFlight = new Map<string, Promise<T>>();
  return {
    run(key: string, task: () => Promise<T>): Promise<T> {
      const running = inFlight.get(key);
      if (running) return running;
      const promise = (async () => {
        try {
          return await task();
        } finally {
          inFlight.delete(key);
        }
      })();
      inFlight.set(key, promise);
      return promise;
    },
    get size() {
      return inFlight.size;
    },
  };
}
