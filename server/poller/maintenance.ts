/**
 * Periodic upkeep hosted in the Koa process: renew mail watches, and the safety sweep that
 * resyncs accounts whose notifications stopped (watch expired or never renewed, or no
 * notification for longer than STALE_AFTER_MS) with a full resync, since any number of
 * changes may have been missed.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.ts';
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

  /** Accounts whose notifications cannot be trusted any more. */
  async function staleAccounts(): Promise<string[]> {
    const now = clock();
    const stale = new Date(now.getTime() - staleAfterMs);
    const rows = (await deps.orm.em.getConnection().execute(
      `select s.account_id from sync_states s
         join credentials c on c.account_id = s.account_id
         join accounts a on a.id = s.account_id
        where not a.needs_reconnect and s.history_id is not null
          and ((s.watch_expires_at is not null and s.watch_expires_at < ?)
            or (greatest(s.last_notification_at, s.last_synced_at) < ?))
        order by s.last_synced_at nulls first limit 200`,
      [now, stale],
    )) as { account_id: string }[];
    return rows.map((r) => r.account_id);
  }

  async function runOnce() {
    const renewal = await deps.watch.renewDue();
    const accounts = await staleAccounts();
    let resynced = 0;
    for (const accountId of accounts) {
      try {
        await deps.sync.fullResync(accountId);
        resynced++;
      } catch (err) {
        log.warn({ accountId, code: err instanceof AppError ? err.code : 'INTERNAL_ERROR' }, 'safety resync failed');
      }
    }
    log.info({ watchesRenewed: renewal.renewed, watchRenewalsFailed: renewal.failed.length, resynced }, 'maintenance round');
    return { ...renewal, resynced, stale: accounts };
  }

  return {
    runOnce,
    start() {
      if (timer) return;
      const tick = () => {
        running = runOnce().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'maintenance round failed'));
      };
      timer = setInterval(tick, deps.everyMs ?? 10 * 60_000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
