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

  /**
   * Accounts whose notifications cannot be trusted: the watch expired, or nothing was heard
   * and nothing synced for too long (an account never synced counts from its row's last
   * change, so one whose every notification was lost is still covered); and accounts whose
   * listing was left half-done.
   */
  async function staleAccounts(): Promise<string[]> {
    const rows = (await deps.orm.em.getConnection().execute(
      `select s.account_id from sync_states s
         join credentials c on c.account_id = s.account_id
         join accounts a on a.id = s.account_id
        where not a.needs_reconnect
          and ((s.watch_expires_at is not null and s.watch_expires_at < now())
            or coalesce(greatest(s.last_notification_at, s.last_synced_at), s.updated_at) < now() - make_interval(secs => ?)
            or (s.full_sync_active and coalesce(s.last_synced_at, s.updated_at) < now() - make_interval(secs => ?))
            or exists (select 1 from mail_set_aside x where x.account_id = s.account_id and x.retry_after <= now()))
        order by s.last_synced_at nulls first limit ?`,
      [staleAfterMs / 1000, LISTING_LEFT_AFTER_MS / 1000, SWEEP_BATCH],
    )) as { account_id: string }[];
    return rows.map((r) => r.account_id);
  }

  const handlers = {
    async [QUEUES.watchRenewal]() {
      // A watch that lapsed left a gap no notification covers: its account syncs once it is renewed.
      const lapsed = (await deps.orm.em.getConnection().execute(
        'select account_id from sync_states where watch_expires_at < now() order by watch_expires_at limit ?',
        [SWEEP_BATCH],
      )) as { account_id: string }[];
      const renewal = await deps.watch.renewDue();
      for (const { account_id } of lapsed) if (!renewal.failed.includes(account_id)) await deps.engine.enqueueSync({ accountId: account_id, reason: 'sweep' });
      log.info({ watchesRenewed: renewal.renewed, watchRenewalsFailed: renewal.failed.length }, 'watch renewal');
      return renewal;
    },
    async [QUEUES.quietSweep]() {
      const stale = await staleAccounts();
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
