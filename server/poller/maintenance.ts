/**
 * Periodic upkeep hosted in the Koa process: renew mail watches, purge expired sessions and
 * OAuth states, and the safety sweep that resyncs accounts whose notifications stopped
 * (watch expired or never renewed, or no notification for longer than STALE_AFTER_MS) with
 * a full resync, since any number of changes may have been missed.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { errorSummary, type Logger } from '../logger.ts';
import type { WatchService } from '../domain/mail/watch.service.ts';
import { AppError } from '../domain/errors.ts';

export const STALE_AFTER_MS = 6 * 3600 * 1000;

export interface SweepSync {
  fullResync(accountId: string): Promise<unknown>;
}

export function createMaintenance(deps: {
  orm: MikroORM;
  watch: WatchService;
  sync: SweepSync;
  /** Deletes expired sessions and OAuth states (domain/auth/purge-expired.ts). */
  purge?: () => Promise<{ sessions: number; oauthStates: number }>;
  log: Logger;
  everyMs?: number;
  staleAfterMs?: number;
  clock?: () => Date;
}) {
  const clock = deps.clock ?? (() => new Date());
  const staleAfterMs = deps.staleAfterMs ?? STALE_AFTER_MS;
  const log = deps.log.child({ component: 'maintenance' });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopping = false;

  /**
   * Accounts whose notifications cannot be trusted any more: the watch expired, or nothing
   * was heard and nothing synced for too long (an account never synced counts from when its
   * row was last touched, so one whose every notification was lost is still covered).
   */
  async function staleAccounts(): Promise<string[]> {
    const now = clock();
    const stale = new Date(now.getTime() - staleAfterMs);
    const rows = (await deps.orm.em.getConnection().execute(
      `select s.account_id from sync_states s
         join credentials c on c.account_id = s.account_id
         join accounts a on a.id = s.account_id
        where not a.needs_reconnect
          and ((s.watch_expires_at is not null and s.watch_expires_at < ?)
            or coalesce(greatest(s.last_notification_at, s.last_synced_at), s.updated_at) < ?)
        order by s.last_synced_at nulls first limit 200`,
      [now, stale],
    )) as { account_id: string }[];
    return rows.map((r) => r.account_id);
  }

  async function runOnce() {
    // Before renewing: a watch that had expired must still count, its gap was never notified.
    const accounts = await staleAccounts();
    const renewal = await deps.watch.renewDue();
    let resynced = 0;
    for (const accountId of accounts) {
      if (stopping) break; // shutting down: the next round (of this or another instance) picks them up
      try {
        await deps.sync.fullResync(accountId);
        resynced++;
      } catch (err) {
        log.warn({ accountId, code: err instanceof AppError ? err.code : 'INTERNAL_ERROR' }, 'safety resync failed');
      }
    }
    const purged = await deps.purge?.();
    log.info({ watchesRenewed: renewal.renewed, watchRenewalsFailed: renewal.failed.length, resynced, purged }, 'maintenance round');
    return { ...renewal, resynced, stale: accounts, purged };
  }

  return {
    runOnce,
    start() {
      if (timer) return;
      stopping = false;
      const tick = () => {
        if (running) return; // a long round is still going: never two at once
        running = runOnce()
          .catch((err: unknown) => log.warn({ ...errorSummary(err) }, 'maintenance round failed'))
          .finally(() => (running = undefined));
      };
      timer = setInterval(tick, deps.everyMs ?? 10 * 60_000);
      timer.unref();
    },
    /** Stops the timer; a round in flight finishes the resync it is in and starts no other. */
    async stop() {
      stopping = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
