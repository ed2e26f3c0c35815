/**
 * The scheduled jobs, each run once per period for the whole cluster (pg-boss cron):
 * - watch renewal: renews the mail watches due (domain/mail/sync/watch.service.ts);
 * - the quiet-account sweep: an account whose watch lapsed, that was not heard of for
 *   STALE_AFTER_MS, or that has set-aside messages due for another try gets a sync job like
 *   any notification's: a cheap history sync from its checkpoint, which falls back to a full
 *   listing only when the provider no longer has that history; a listing in progress
 *   resumes from its stored page token, and one left half-done (LISTING_LEFT_AFTER_MS) is resumed;
 * - purge: expired sessions and OAuth states (finished jobs are pg-boss's own retention).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { takeStaleAccounts } from '../domain/mail/sync/states/index.ts';
import type { WatchService } from '../domain/mail/sync/watch.service.ts';
import type { Logger } from '../infra/logger.ts';
import { QUEUES, type JobEngine } from './engine.ts';

export const STALE_AFTER_MS = 6 * 3600 * 1000;
/**
 * A listing no job has moved for this long was left behind (one the sync route began and the
 * client stopped pressing): the sweep resumes it. Every page a worker lists commits within
 * seconds, so a listing under way is never taken for a left one.
 */
export const LISTING_LEFT_AFTER_MS = 10 * 60 * 1000;
/** Accounts one sweep asks a sync for (by next sweep time); the next sweep takes the next ones. */
export const SWEEP_BATCH = 1000;
/** The sweep's cron period (SCHEDULES): a healthy account it took is not taken again before it ends. */
const SWEEP_PERIOD_SECONDS = 600;

export function createScheduledJobs(deps: {
  orm: MikroORM;
  engine: JobEngine;
  watch: Pick<WatchService, 'renewDue'>;
  purge: () => Promise<{ sessions: number; oauthStates: number }>;
  log: Logger;
  staleAfterMs?: number;
  sweepBatch?: number;
  clock?: () => Date;
}) {
  const log = deps.log.child({ component: 'scheduled' });
  const staleAfterMs = deps.staleAfterMs ?? STALE_AFTER_MS;
  const clock = deps.clock ?? (() => new Date());

  const handlers = {
    async [QUEUES.watchRenewal]() {
      const renewal = await deps.watch.renewDue();
      // A watch that lapsed left a gap no notification covers: its account syncs once it is renewed.
      for (const accountId of renewal.resumed) await deps.engine.enqueueSync({ accountId, reason: 'sweep' });
      log.info(
        {
          watchesRenewed: renewal.renewed,
          watchRenewalsFailed: renewal.failed.length,
          lapsedResumed: renewal.resumed.length,
        },
        'watch renewal',
      );
      return renewal;
    },
    async [QUEUES.quietSweep]() {
      const timing = {
        now: clock(),
        staleSeconds: staleAfterMs / 1000,
        listingLeftSeconds: LISTING_LEFT_AFTER_MS / 1000,
        periodSeconds: SWEEP_PERIOD_SECONDS,
      };
      const stale = await takeStaleAccounts(deps.orm.em.getConnection(), timing, deps.sweepBatch ?? SWEEP_BATCH);
      let queued = 0;
      for (const accountId of stale) if (await deps.engine.enqueueSync({ accountId, reason: 'sweep' })) queued++;
      log.info({ stale: stale.length, queued }, 'quiet-account sweep');
      return { stale, queued };
    },
    async [QUEUES.purgeExpired]() {
      const purged = await deps.purge();
      log.info({ purged }, 'expired sessions and sign-in states purged');
      return purged;
    },
  };

  return {
    handlers,
    async start() {
      for (const [name, handler] of Object.entries(handlers)) {
        await deps.engine.work(name as keyof typeof handlers, { pollingIntervalSeconds: 5 }, () => handler());
      }
    },
  };
}
