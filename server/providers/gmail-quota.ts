/**
 * Client-side pacing within the mail provider's per-user quota (Gmail: 250 units per user
 * per moving second; messages.get and messages.list 5, history.list 2, threads.get 10, ...),
 * so that a backfill runs as fast as the quota allows without the provider ever refusing a
 * call. Each account's calls are charged to its own moving one-second window, kept a little
 * under the quota (the provider counts on arrival, we count on departure); a call that would
 * exceed it waits until enough of the window has passed.
 */

/** Quota units per call, as the provider documents them. */
export const QUOTA_UNITS: Readonly<Record<string, number>> = {
  profile: 1,
  'labels.get': 1,
  'messages.list': 5,
  'messages.get': 5,
  'attachments.get': 5,
  'history.list': 2,
  'threads.get': 10,
  watch: 100,
  stop: 50,
};

/** Share of the quota the pacer uses (headroom for clock and network skew). */
const HEADROOM = 0.95;
const WINDOW_MS = 1000;

export interface QuotaPacer {
  /**
   * Resolves when `units` may be spent now for this key (spends them); call the returned
   * function when the request has been answered: the spend then counts from that moment,
   * since the provider counted it on arrival, somewhere in between.
   */
  take(key: string, units: number): Promise<() => void>;
}

interface Window {
  log: { at: number; units: number }[];
  queue: Promise<void>;
  pending: number;
}


export function createQuotaPacer(unitsPerSecond: number, now: () => number = Date.now): QuotaPacer {
  const limit = Math.max(1, Math.floor(unitsPerSecond * HEADROOM));
  const windows = new Map<string, Window>();
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

  async function spend(w: Window, units: number): Promise<() => void> {
    for (;;) {
      const t = now();
      w.log = w.log.filter((x) => x.at > t - WINDOW_MS);
      const used = w.log.reduce((n, x) => n + x.units, 0);
      if (used + Math.min(units, limit) <= limit) {
        const entry = { at: t, units };
        w.log.push(entry);
        return () => void (entry.at = Math.max(entry.at, now()));
      }
      // Wait until the oldest spend leaves the window (then look again).
      const oldest = Math.min(...w.log.map((x) => x.at));
      await sleep(Math.max(1, oldest + WINDOW_MS - t));
    }
  }

  /** Forgets accounts with nobody waiting and nothing spent within the window. */
  function sweep() {
    const t = now();
    for (const [key, w] of windows) if (w.pending === 0 && !w.log.some((x) => x.at > t - WINDOW_MS)) windows.delete(key);
  }

  return {
    take(key, units) {
      if (units <= 0) return Promise.resolve(() => undefined);
      if (windows.size > 1000) sweep();
      let w = windows.get(key);
      if (!w) {
        w = { log: [], queue: Promise.resolve(), pending: 0 };
        windows.set(key, w);
      }
      const entry = w;
      entry.pending++;
      // One caller at a time per key, in order: concurrent fetches share the window fairly.
      const turn = entry.queue.then(() => spend(entry, units)).finally(() => entry.pending--);
      entry.queue = turn.then(() => undefined);
      return turn;
    },
  };
}
