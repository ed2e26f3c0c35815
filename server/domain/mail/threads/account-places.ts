/**
 * Places per account, in this process: `perAccount` tasks of one account run at once, up to
 * `maxWaiting` more wait their turn in order, one more is refused at once (SERVICE_UNAVAILABLE
 * with `retryAfterSeconds`) rather than queueing without end. Other accounts never wait for
 * this one. The thread answers (open-gate.ts) and the provider fetches of threads
 * (thread-bodies.service.ts) each hold their own.
 */
import { AppError } from '../../errors.ts';

export interface AccountPlaces {
  run<T>(accountId: string, task: () => Promise<T>): Promise<T>;
  /** Tasks running and waiting, for the account. */
  load(accountId: string): { running: number; waiting: number };
}

export function createAccountPlaces(opts: {
  perAccount: number;
  maxWaiting: number;
  retryAfterSeconds: number;
  describe?: string;
}): AccountPlaces {
  const accounts = new Map<string, { running: number; waiting: (() => void)[] }>();
  return {
    async run(accountId, task) {
      let state = accounts.get(accountId);
      if (!state) accounts.set(accountId, (state = { running: 0, waiting: [] }));
      const entry = state;
      if (entry.running < opts.perAccount) entry.running++;
      else if (entry.waiting.length >= opts.maxWaiting) {
        const cause = opts.describe
          ? new Error(`${entry.running} ${opts.describe} of the account running, ${entry.waiting.length} waiting`)
          : undefined;
        throw new AppError('SERVICE_UNAVAILABLE', { retryAfter: opts.retryAfterSeconds, cause });
      }
      // The place is handed over by the task that leaves it (running is not decremented then).
      else await new Promise<void>((resolve) => entry.waiting.push(resolve));
      try {
        return await task();
      } finally {
        const next = entry.waiting.shift();
        if (next) next();
        else if (--entry.running === 0) accounts.delete(accountId);
      }
    },
    load(accountId) {
      const state = accounts.get(accountId);
      return { running: state?.running ?? 0, waiting: state?.waiting.length ?? 0 };
    },
  };
}
