/**
 * The longest life of the open streams (the session's idle lifetime), with one timer for all
 * of them rather than one each: every stream is given the same life, so they end in the order
 * they began and the timer only waits for the oldest.
 */
export interface Lifetimes<T> {
  add(item: T): void;
  /** Forgets an item that ended on its own. */
  delete(item: T): void;
}

export function createLifetimes<T>(lifeMs: number, end: (item: T) => void): Lifetimes<T> {
  /** Each item's deadline (performance.now()); the insertion order is the deadlines' order. */
  const deadlines = new Map<T, number>();
  let timer: NodeJS.Timeout | undefined;

  function arm() {
    if (timer) return;
    for (const deadline of deadlines.values()) {
      timer = setTimeout(expire, Math.max(0, deadline - performance.now()));
      timer.unref();
      return;
    }
  }

  function expire() {
    timer = undefined;
    const now = performance.now();
    for (const [item, deadline] of deadlines) {
      if (deadline > now) break;
      deadlines.delete(item);
      end(item);
    }
    arm();
  }

  return {
    add(item) {
      deadlines.set(item, performance.now() + lifeMs);
      arm();
    },
    delete(item) {
      deadlines.delete(item);
      if (!deadlines.size && timer) {
        clearTimeout(timer);
        timer = undefined;
      }
    },
  };
}
