/**
 * How many thread answers one account has built at once, and how many of their bodies' bytes
 * it is served per second. An answer of a big thread is megabytes read, held and serialised on
 * the one event loop every user shares: ten tabs or clients of one account opening such threads
 * together put ten of those turns back to back, and every other user's request waited behind
 * them (bench item 13, bench/results/HISTORY.md). One at a time was not enough: a client opening
 * a 2 MB thread in a closed loop still kept the loop, PostgreSQL and the link busy answer after
 * answer, so each account's bodies are also paced (a token bucket: `burstBytes` at once, then
 * `bytesPerSecond`), and an account past its pace waits, without holding the loop, before its
 * next answer is built. Ordinary use never meets the pace: a burst is sixteen threads at the
 * body budget, and the pace is dozens of ordinary threads a second.
 *
 * The gate is per process, as the event loop it protects is. Past `perAccount` answers in
 * progress, an account's next opens wait their turn (first come, first served); past
 * `maxWaiting` waiting, an open is refused at once with 503 and Retry-After instead of queueing
 * without end. Other accounts never wait for this one.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';
import { createAccountPlaces } from './account-places.ts';

export interface OpenGateOptions {
  /** Answers one account builds at once (default 1). */
  perAccount?: number;
  /** Opens of one account waiting at most; one more is SERVICE_UNAVAILABLE (default 32). */
  maxWaiting?: number;
  /** Body bytes an account is served per second once its burst is spent (default 8 MiB). */
  bytesPerSecond?: number;
  /** Body bytes an account may be served at once (default 32 MiB). */
  burstBytes?: number;
  /** Milliseconds now, and a wait (tests pass a clock they move). */
  now?: () => number;
  sleep?: (ms: number) => Promise<unknown>;
}

export interface OpenGate {
  /**
   * Runs `fn` in one of the account's places, waiting for one when all are taken and, once in
   * it, until the account's pace allows; `fn` tells `served` the body bytes its answer carries.
   */
  run<T>(accountId: string, fn: (served: (bytes: number) => void) => Promise<T>): Promise<T>;
  /** Answers in progress and opens waiting, for the account. */
  load(accountId: string): { running: number; waiting: number };
}

export const DEFAULT_BODY_PACE = { bytesPerSecond: 8 * 1024 * 1024, burstBytes: 32 * 1024 * 1024 };

/**
 * Each account's bucket as the time it would be full again (the generic cell rate algorithm):
 * serving `bytes` moves it `bytes / rate` later; an account may go on while it is at most a
 * burst's worth ahead of now. An account whose time has passed is full and is forgotten.
 */
function createPace(opts: Required<Pick<OpenGateOptions, 'bytesPerSecond' | 'burstBytes' | 'now'>>) {
  const fullAt = new Map<string, number>();
  const msPerByte = 1000 / opts.bytesPerSecond;
  const burstMs = opts.burstBytes * msPerByte;
  const forgetFull = (t: number) => {
    for (const [id, at] of fullAt) if (at <= t) fullAt.delete(id);
  };
  return {
    /** Milliseconds the account must wait before it is served again (0: go on). */
    waitMs: (accountId: string) => Math.max(0, (fullAt.get(accountId) ?? 0) - burstMs - opts.now()),
    charge(accountId: string, bytes: number) {
      const t = opts.now();
      if (fullAt.size >= 1024) forgetFull(t);
      if (bytes > 0) fullAt.set(accountId, Math.max(fullAt.get(accountId) ?? 0, t) + bytes * msPerByte);
    },
  };
}

export function createOpenGate(opts: OpenGateOptions = {}): OpenGate {
  const perAccount = opts.perAccount ?? 1;
  const maxWaiting = opts.maxWaiting ?? 32;
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? sleepFor;
  const pace = createPace({
    bytesPerSecond: opts.bytesPerSecond ?? DEFAULT_BODY_PACE.bytesPerSecond,
    burstBytes: opts.burstBytes ?? DEFAULT_BODY_PACE.burstBytes,
    now,
  });
  const places = createAccountPlaces({ perAccount, maxWaiting, retryAfterSeconds: 1 });

  return {
    run: (accountId, fn) =>
      places.run(accountId, async () => {
        const wait = pace.waitMs(accountId);
        if (wait > 0) await sleep(wait);
        return fn((bytes) => pace.charge(accountId, bytes));
      }),
    load: (accountId) => places.load(accountId),
  };
}
