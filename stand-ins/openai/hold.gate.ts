/**
 * Holds for the OpenAI stand-in: while a test holds the gate, chat and Responses requests wait
 * (counted as pending) until it is released, so tests can line up concurrent calls. Also the
 * abortable sleep behind the configured latency; both give up when the client goes away.
 */

/** Thrown when the request's connection closed while it waited. */
export class Aborted extends Error {}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Aborted());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export class HoldGate {
  private holdCount = 0;
  private readonly waiters = new Set<{ resolve: () => void }>();
  private readonly pendingListeners = new Set<() => void>();

  private notifyPending(): void {
    for (const l of [...this.pendingListeners]) l();
  }

  private releaseWaiters(): void {
    for (const w of [...this.waiters]) w.resolve();
    this.waiters.clear();
    this.notifyPending();
  }

  /** Resolves at once when nothing holds the gate, else when the last hold is released. */
  waitForRelease(signal: AbortSignal): Promise<void> {
    if (this.holdCount === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.waiters.delete(waiter);
        this.notifyPending();
        reject(new Aborted());
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
      this.notifyPending();
    });
  }

  /** Holds the gate; returns the release function (idempotent). */
  hold(): () => void {
    this.holdCount += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holdCount = Math.max(0, this.holdCount - 1);
      if (this.holdCount === 0) this.releaseWaiters();
    };
  }

  /** Drops every hold and lets every waiting request go on. */
  reset(): void {
    this.holdCount = 0;
    this.releaseWaiters();
  }

  pending(): number {
    return this.waiters.size;
  }

  waitForPending(n: number, timeoutMs = 5000): Promise<void> {
    if (this.waiters.size >= n) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const listener = () => {
        if (this.waiters.size >= n) {
          clearTimeout(timer);
          this.pendingListeners.delete(listener);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        this.pendingListeners.delete(listener);
        reject(new Error(`waitForPending(${n}): only ${this.waiters.size} pending after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pendingListeners.add(listener);
    });
  }
}
