/**
 * The mail watch of each account: registered right after sign-in with PUBSUB_TOPIC (label
 * INBOX), renewed daily (the provider drops watches after 7 days), stopped at disconnect
 * and deletion. Its state (expiry, last renewal, the next try after a failure) lives in
 * sync_states: a renewal that fails waits a growing delay, so broken accounts never take the
 * slots of healthy ones, and an account with no mailbox at the provider is left out.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { errorSummary, type Logger } from '../../../infra/logger.ts';
import type { MailWatchControl } from '../../auth/auth.service.ts';
import { isNoMailbox } from '../../../providers/gmail-errors.ts';
import { mapLimit } from '../../../providers/map-limit.ts';
import {
  clearWatch,
  clearWatchesOfDisconnected,
  readWatchExpiry,
  recordWatches,
  recordWatchFailures,
  watchesDue,
} from './states/index.ts';

/** The provider's watch calls of one account, on one client (the same grant for a watch and its undoing). */
export interface MailWatchApi {
  open(accountId: string): Promise<{
    watch(req: { topicName: string; labelIds: string[] }): Promise<{ expiration: Date }>;
    stop(): Promise<void>;
  }>;
}

export const RENEW_AFTER_MS = 24 * 3600 * 1000;
/**
 * Watches a renewal run takes at a time (by next-try time). A run takes batch after batch while
 * watches are due and its time lasts (RENEWAL_RUN_MS), so it is sized by the number of accounts,
 * not by a constant: each account is due once a day, a run comes every 10 minutes, so a run
 * renews about accounts/144. At 1M accounts that is ~6,950 watch calls a run; at
 * RENEWAL_CONCURRENCY calls at once and ~300 ms a call, ~65 s of the run's 8 minutes.
 */
export const RENEWAL_BATCH = 500;
const RENEWAL_CONCURRENCY = 32;
/** How long one run goes on taking batches (the scheduled job expires after 30 minutes; the next run is 10 minutes on). */
export const RENEWAL_RUN_MS = 8 * 60_000;

export interface Renewal {
  renewed: number;
  failed: string[];
  /** Renewed accounts whose watch had lapsed: a gap no notification covers, to be synced. */
  resumed: string[];
}

export function createWatchService(deps: {
  orm: MikroORM;
  api: MailWatchApi;
  topic?: string;
  log: Logger;
  clock?: () => Date;
  batch?: number;
  /** How long a run goes on taking batches (default RENEWAL_RUN_MS; measured on `clock`). */
  runMs?: number;
}): MailWatchControl & { renewDue(): Promise<Renewal> } {
  const clock = deps.clock ?? (() => new Date());
  const batch = deps.batch ?? RENEWAL_BATCH;
  const log = deps.log.child({ component: 'mail-watch' });

  const db = () => deps.orm.em.getConnection();
  /** The provider's call for one account; its client is kept to stop the watch again if it must. */
  async function make(accountId: string) {
    const api = await deps.api.open(accountId);
    const { expiration } = await api.watch({ topicName: deps.topic!, labelIds: ['INBOX'] });
    return { accountId, api, expiresAt: expiration };
  }

  /**
   * Records the watches made, each only while its account is still connected: a disconnect or
   * deletion that ran meanwhile has already stopped the old watch, so the one just made is
   * stopped again with the same client, and nothing is left behind.
   */
  async function record(made: Awaited<ReturnType<typeof make>>[]): Promise<Set<string>> {
    const kept = await recordWatches(db(), made, clock());
    for (const m of made) {
      if (kept.has(m.accountId)) {
        log.info({ accountId: m.accountId, expiresAt: m.expiresAt.toISOString() }, 'mail watch registered');
        continue;
      }
      // Where the grant is already revoked the provider refuses the stop, and stops the watch itself.
      await m.api.stop().then(
        () => log.info({ accountId: m.accountId }, 'mail watch made during a disconnect was stopped again'),
        (err: unknown) =>
          log.warn(
            { accountId: m.accountId, ...errorSummary(err) },
            'stopping a watch made during a disconnect failed',
          ),
      );
    }
    return kept;
  }

  /** Registers (or renews) one account's watch (sign-in, reconnect). */
  async function register(accountId: string) {
    if (!deps.topic) return;
    await record([await make(accountId)]);
  }

  return {
    register,
    async stop(em: EntityManager, accountId: string) {
      if (!deps.topic) return;
      if (!(await readWatchExpiry(em, accountId))) return;
      await (await deps.api.open(accountId)).stop();
      await clearWatch(em, accountId);
      log.info({ accountId }, 'mail watch stopped');
    },
    /**
     * Renews every watch of a connected account last renewed more than a day ago (or never),
     * or that would lapse within a day (a provider may grant less than its usual week).
     */
    async renewDue() {
      if (!deps.topic) return { renewed: 0, failed: [], resumed: [] };
      await clearWatchesOfDisconnected(db());
      const started = clock().getTime();
      const total: Renewal = { renewed: 0, failed: [], resumed: [] };
      // Batch after batch while watches are due (a failed one waits for its retry time, so it is not taken again).
      for (;;) {
        const run = await renewBatch(clock());
        total.renewed += run.renewed;
        total.failed.push(...run.failed);
        total.resumed.push(...run.resumed);
        const progressed = run.renewed + run.failed.length > 0;
        if (!progressed || run.taken < batch || clock().getTime() - started >= (deps.runMs ?? RENEWAL_RUN_MS))
          return total;
      }
    },
  };

  /** One batch of the watches due: renewed a few at a time, each account's failure its own. */
  async function renewBatch(now: Date): Promise<Renewal & { taken: number }> {
    const due = await watchesDue(
      db(),
      now,
      new Date(now.getTime() - RENEW_AFTER_MS),
      new Date(now.getTime() + RENEW_AFTER_MS),
      batch,
    );
    const made: Awaited<ReturnType<typeof make>>[] = [];
    const failed: string[] = [];
    const noMailbox: string[] = [];
    // A few accounts at a time: each renewal is one provider call, and one account's failure is its own.
    await mapLimit(due, RENEWAL_CONCURRENCY, ({ accountId }) =>
      make(accountId).then(
        (m) => void made.push(m),
        (err: unknown) => {
          failed.push(accountId);
          if (isNoMailbox(err)) noMailbox.push(accountId);
          log.warn({ accountId, noMailbox: isNoMailbox(err), ...errorSummary(err) }, 'mail watch renewal failed');
        },
      ),
    );
    const kept = await record(made);
    await recordWatchFailures(db(), failed, noMailbox, now);
    const resumed = due.filter((d) => d.lapsed && kept.has(d.accountId)).map((d) => d.accountId);
    return { renewed: kept.size, failed, resumed, taken: due.length };
  }
}
export type WatchService = ReturnType<typeof createWatchService>;
