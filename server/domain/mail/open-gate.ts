/**
 * How many thread answers one account has built at once. An answer of a big thread is
 * megabytes read, held and serialised on the one event loop every user shares: ten tabs or
 * clients of one account opening such threads together put ten of those turns back to back,
 * and every other user's request waited behind them (bench item 13, bench/results/HISTORY.md).
 * The gate is per process, as the event loop it protects is. Past `perAccount` answers in
 * progress, an account's next opens wait their turn (first come, first served) without holding the loop;
 * past `maxWaiting` waiting, an open is refused at once with 503 and Retry-After instead of
 * queueing without end. Other accounts never wait for this one.
 */
import { AppError } from '../errors.ts';

export interface OpenGateOptions {
  /** Answers one account builds at once (default 1). */
  perAccount?: number;
  /** Opens of one account waiting at most; one more is SERVICE_UNAVAILABLE (default 32). */
  maxWaiting?: number;
}

export interface OpenGate {
  /** Runs `fn` in one of the account's places, waiting for one when all are taken. */
  run<T>(accountId: string, fn: () => Promise<T>): Promise<T>;
  /** Answers in progress and opens waiting, for the account. */
  load(accountId: string): { running: number; waiting: number };
}

export function createOpenGate(opts: OpenGateOptions = {}): OpenGate {
  const perAccount = opts.perAccount ?? 1;
  const maxWaiting = opts.maxWaiting ?? 32;
  const accounts = new Map<string, { running: number; waiting: (() => void)[] }>();

  return {
    async run(accountId, fn) {
      let state = accounts.get(accountId);
      if (!state) accounts.set(accountId, (state = { running: 0, waiting: [] }));
      if (state.running < perAccount) state.running++;
      else if (state.waiting.length >= maxWaiting) throw new AppError('SERVICE_UNAVAILABLE', { retryAfter: 1 });
      // The place is handed over by the answer that leaves it (running is not decremented then).
      else await new Promise<void>((resolve) => state.waiting.push(resolve));
      try {
        return await fn();
      } finally {
        const next = state.waiting.shift();
        if (next) next();
        else if (--state.running === 0) accounts.delete(accountId);
      }
    },
    load: (accountId) => {
      const state = accounts.get(accountId);
      return { running: state?.running ?? 0, waiting: state?.waiting.length ?? 0 };
    },
  };
}
