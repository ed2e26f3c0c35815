/**
 * The scheduled jobs, each run once per period for the whole cluster (pg-boss cron):
 * - watch renewal: renews the mail watches due (domain/mail/watch.service.ts);
 * - the quiet-account sweep: an account whose watch lapsed, that was not heard of for
 *   STALE_AFTER_MS, or that has set-aside messages due for another try gets a sync job like
 *   any notification's: a cheap history sync from its checkpoint, which falls back to a full
 *   listing only when the provider no longer has that history; a listing in progress
 *   resumes from its stored page token, and one left half-done (LISTING_LEFT_AFTER_MS) is resumed;
 * - purge: expired sessions and OAuth states (finished jobs are pg-boss's own retention).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { lapsedWatches, staleAccounts } from '../domain/mail/sync-states.ts';
import type { WatchService } from '../domain/mail/watch.service.ts';
import type { Logger } from '../infra/logger.ts';
import { QUEUES, type JobEngine } from './engine.ts';

export const STALE_AFTER_MS = 6 * 3600 * 1000;
/**
 * A listing no job has moved for this long was left behind (one the sync route began and the
 * client stopped pressing): the sweep resumes it. Every page a worker lists commits within
 * seconds, so a listing under way is never taken for a left one.
 */
export const LISTING_LEFT_AFTER_MS = 10 * 60 * 1000;
/** Accounts one sweep asks a sync for (oldest first); the next sweep takes the next ones. */
const SWEEP_BATCH = 1000;

export function createScheduledJobs(deps: {
  orm: MikroORM;
  engine: JobEngine;
  watch: Pick<WatchService, 'renewDue'>;
  purge: () => Promise<{ sessions: number; oauthStates: number }>;
  log: Logger;
  staleAfterMs?: number;
}) {
  const log = deps.log.child({ component: 'scheduled' });
  const staleAfterMs = deps.staleAfterMs ?? STALE_AFTER_MS;

  const handlers = {
    async [QUEUES.watchRenewal]() {
      // A watch that lapsed left a gap no notification covers: its account syncs once it is renewed.
      const lapsed = await lapsedWatches(deps.orm.em.getConnection(), SWEEP_BATCH);
      const renewal = await deps.watch.renewDue();
      for (const accountId of lapsed) if (!renewal.failed.includes(accountId)) await deps.engine.enqueueSync({ accountId, reason: 'sweep' });
      log.info({ watchesRenewed: renewal.renewed, watchRenewalsFailed: renewal.failed.length }, 'watch renewal');
      return renewal;
    },
    async [QUEUES.quietSweep]() {
      const stale = await staleAccounts(deps.orm.em.getConnection(), staleAfterMs / 1000, LISTING_LEFT_AFTER_MS / 1000, SWEEP_BATCH);
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
