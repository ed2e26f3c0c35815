/** The background sync's outcome on the account's row, and the cluster gauges GET /metrics reads. */
import { select, type Sql } from './sql.ts';

const CLEAR_FAILURE =
  'update sync_states set last_error_code = null, failing_since = null, dead_lettered_at = null where account_id = ? and last_error_code is not null';

/** A background sync made progress: the failure it recorded is over. */
export async function recordSyncSuccess(em: Sql, accountId: string): Promise<void> {
  await em.execute(CLEAR_FAILURE, [accountId], 'run');
}

/**
 * A background sync caught up with the provider's history: as recordSyncSuccess, and in the
 * same statement whether the checkpoint is still below the history id the account's
 * notifications named (the provider's history lags its notifications by seconds): how long ago
 * the last one came. Null when the checkpoint got there, a listing runs, or nothing was notified.
 */
export async function recordCaughtUp(em: Sql, accountId: string): Promise<{ notifiedAheadSeconds: number } | null> {
  const rows = await select<{ since: number }>(
    em,
    `with cleared as (${CLEAR_FAILURE})
     select extract(epoch from now() - last_notification_at)::float8 as since from sync_states
      where account_id = ? and not full_sync_active and history_id is not null and notified_history_id > history_id and last_notification_at is not null`,
    [accountId, accountId],
  );
  return rows[0] ? { notifiedAheadSeconds: Math.max(0, rows[0].since) } : null;
}

/** The account's bulk work waits `waitMs` for the deployment's daily quota budget (the sync state says until when). */
export async function recordQuotaWait(em: Sql, accountId: string, waitMs: number): Promise<void> {
  await em.execute(
    `update sync_states set quota_wait_until = now() + make_interval(secs => ?::float8 / 1000) where account_id = ?`,
    [waitMs, accountId],
    'run',
  );
}

/** A background sync failed with `code`; `deadLettered`: its job ran out of retries. */
export async function recordSyncFailure(
  em: Sql,
  accountId: string,
  code: string,
  deadLettered: boolean,
): Promise<void> {
  await em.execute(
    `update sync_states set last_error_code = ?, failing_since = coalesce(failing_since, now())${deadLettered ? ', dead_lettered_at = now()' : ''} where account_id = ?`,
    [code, accountId],
    'run',
  );
}

export interface SyncGauges {
  maxLagSeconds: number;
  backlogAccounts: number;
  deadLetteredAccounts: number;
  watchesExpiringAccounts: number;
  setAsideMessages: number;
  setAsideOldestSeconds: number;
}

/**
 * Over connected accounts, in one statement: the worst sync lag, accounts notified since their
 * last sync, accounts dead-lettered, accounts whose watch lapses within 48 h (or has lapsed)
 * without a renewal in the last 24 h (renewal runs daily: renewal stopped, and push with it),
 * and the set-aside messages with the age of the oldest.
 */
export async function readSyncGauges(em: Sql): Promise<SyncGauges> {
  const [row] = await select<{
    lag: number;
    backlog: number;
    dead_lettered: number;
    watches_expiring: number;
    set_aside: number;
    set_aside_oldest: number;
  }>(
    em,
    `select coalesce(extract(epoch from max(now() - coalesce(s.last_synced_at, a.created_at))), 0)::float8 as lag,
            count(*) filter (where s.last_notification_at > coalesce(s.last_synced_at, '-infinity'))::int as backlog,
            count(*) filter (where s.dead_lettered_at is not null)::int as dead_lettered,
            count(*) filter (where s.watch_expires_at < now() + interval '48 hours'
                               and coalesce(s.watch_renewed_at, '-infinity') < now() - interval '24 hours')::int as watches_expiring,
            coalesce(sum(x.n), 0)::int as set_aside,
            coalesce(extract(epoch from now() - min(x.oldest)), 0)::float8 as set_aside_oldest
       from accounts a join credentials c on c.account_id = a.id join sync_states s on s.account_id = a.id
       left join lateral (select count(*) as n, min(m.first_seen_at) as oldest from mail_set_aside m where m.account_id = a.id) x on true
      where not a.needs_reconnect`,
  );
  return {
    maxLagSeconds: Math.round(row?.lag ?? 0),
    backlogAccounts: row?.backlog ?? 0,
    deadLetteredAccounts: row?.dead_lettered ?? 0,
    watchesExpiringAccounts: row?.watches_expiring ?? 0,
    setAsideMessages: row?.set_aside ?? 0,
    setAsideOldestSeconds: Math.round(row?.set_aside_oldest ?? 0),
  };
}
