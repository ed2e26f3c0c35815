/**
 * The repository of `sync_states`, one row per account: every statement that reads or writes
 * the table is here (checkpoint and lease, mail watch, notifications heard, background sync
 * outcome, what the scheduled jobs and the metrics select).
 *
 * One sync per account across every instance: a lease on the account's sync_states row
 * (lease_owner, lease_until), taken with one conditional upsert and never held inside an
 * open transaction while the provider is called (a session advisory lock through the
 * pool would leak). The checkpoint is written only by the lease holder (fencing): a sync
 * that outlived its lease cannot overwrite the work of the one that took over.
 * The lease is short and kept alive by its holder: a sync may run as long as it needs, and a
 * holder that died lets go within LEASE_SECONDS.
 */
import { toIso } from '../time.ts';

/** What runs a statement: a forked EntityManager (inside its transaction, if any) or a connection. */
export interface Sql {
  execute(query: string, params?: unknown[], method?: 'all' | 'get' | 'run'): Promise<unknown>;
}

const select = async <T>(em: Sql, query: string, params: unknown[] = []): Promise<T[]> => (await em.execute(query, params)) as T[];

export const LEASE_SECONDS = 15;

export interface LeasedState {
  historyId: string | null;
  cursor: string | null;
  fullSyncActive: boolean;
  lastSyncedAt: Date | null;
  /** The database clock when the lease was taken (used to time a full resync). */
  dbNow: string;
  /** Set-aside messages of the account are due for another try. */
  setAsideDue: boolean;
}

export interface Checkpoint {
  historyId: string | null;
  cursor: string | null;
  fullSyncActive: boolean;
  lastSyncedAt: Date;
}

/** Takes the lease (creating the row on first use); null when another sync holds it. */
export async function acquireLease(em: Sql, accountId: string, owner: string, seconds = LEASE_SECONDS): Promise<LeasedState | null> {
  const rows = await select<{ history_id: string | null; full_sync_page_token: string | null; full_sync_active: boolean; last_synced_at: Date | null; db_now: Date; set_aside_due: boolean }>(
    em,
    `insert into sync_states as s (account_id, lease_owner, lease_until) values (?, ?, now() + make_interval(secs => ?))
     on conflict (account_id) do update set lease_owner = excluded.lease_owner, lease_until = excluded.lease_until, updated_at = now()
       where s.lease_until is null or s.lease_until < now()
     returning s.history_id::text as history_id, s.full_sync_page_token, s.full_sync_active, s.last_synced_at, now() as db_now,
       exists (select 1 from mail_set_aside a where a.account_id = s.account_id and a.retry_after <= now()) as set_aside_due`,
    [accountId, owner, seconds],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    historyId: r.history_id,
    cursor: r.full_sync_page_token,
    fullSyncActive: r.full_sync_active,
    lastSyncedAt: r.last_synced_at ? new Date(r.last_synced_at) : null,
    dbNow: toIso(r.db_now),
    setAsideDue: r.set_aside_due,
  };
}

/** Moves the checkpoint and releases the lease; false when the lease was lost (the caller must roll back). */
export async function commitCheckpoint(em: Sql, accountId: string, owner: string, c: Checkpoint): Promise<boolean> {
  const rows = await select<{ account_id: string }>(
    em,
    `update sync_states set history_id = ?::bigint, full_sync_page_token = ?, full_sync_active = ?, last_synced_at = ?::timestamptz,
       lease_owner = null, lease_until = null, updated_at = now()
     where account_id = ? and lease_owner = ? returning account_id`,
    [c.historyId, c.cursor, c.fullSyncActive, c.lastSyncedAt.toISOString(), accountId, owner],
  );
  return rows.length === 1;
}

/** Extends the lease while its owner holds it; false when it was lost (the commit will refuse). */
export async function extendLease(em: Sql, accountId: string, owner: string, seconds = LEASE_SECONDS): Promise<boolean> {
  const rows = await select<{ account_id: string }>(
    em,
    'update sync_states set lease_until = now() + make_interval(secs => ?) where account_id = ? and lease_owner = ? returning account_id',
    [seconds, accountId, owner],
  );
  return rows.length === 1;
}

export async function releaseLease(em: Sql, accountId: string, owner: string): Promise<void> {
  await em.execute('update sync_states set lease_owner = null, lease_until = null where account_id = ? and lease_owner = ?', [accountId, owner], 'run');
}

export async function readLastSyncedAt(em: Sql, accountId: string): Promise<string | null> {
  const rows = await select<{ last_synced_at: Date | null }>(em, 'select last_synced_at from sync_states where account_id = ?', [accountId]);
  const v = rows[0]?.last_synced_at;
  return v ? toIso(v) : null;
}

/** The account's row, made at sign-in (kept as it is when the account signs in again). */
export async function createSyncState(em: Sql, accountId: string): Promise<void> {
  await em.execute('insert into sync_states (account_id) values (?) on conflict (account_id) do nothing', [accountId], 'run');
}

/** Records a registered watch only while the account is connected; false when it no longer is. */
export async function recordWatch(em: Sql, accountId: string, expiresAt: Date, renewedAt: Date): Promise<boolean> {
  const kept = await select<unknown>(
    em,
    `update sync_states s set watch_expires_at = ?, watch_renewed_at = ?
      where s.account_id = ? and exists (select 1 from credentials c join accounts a on a.id = c.account_id where c.account_id = s.account_id and not a.needs_reconnect)
      returning s.account_id`,
    [expiresAt, renewedAt, accountId],
  );
  return kept.length > 0;
}

export async function readWatchExpiry(em: Sql, accountId: string): Promise<Date | null> {
  const rows = await select<{ watch_expires_at: Date | null }>(em, 'select watch_expires_at from sync_states where account_id = ?', [accountId]);
  const v = rows[0]?.watch_expires_at;
  return v ? new Date(v) : null;
}

/** The watch is gone (stopped, or the grant with it): nothing to renew and nothing lapsed. */
export async function clearWatch(em: Sql, accountId: string): Promise<void> {
  await em.execute('update sync_states set watch_expires_at = null, watch_renewed_at = null where account_id = ?', [accountId], 'run');
}

/** Connected accounts whose watch was last renewed before `renewedBefore` (or never), or lapses before `expiresBefore`. */
export async function watchesDue(em: Sql, renewedBefore: Date, expiresBefore: Date, limit: number): Promise<string[]> {
  const rows = await select<{ account_id: string }>(
    em,
    `select s.account_id from sync_states s join credentials c on c.account_id = s.account_id
      join accounts a on a.id = s.account_id
     where not a.needs_reconnect and (s.watch_renewed_at is null or s.watch_renewed_at < ? or s.watch_expires_at < ?)
     order by s.watch_renewed_at nulls first limit ?`,
    [renewedBefore, expiresBefore, limit],
  );
  return rows.map((r) => r.account_id);
}

/** Accounts whose watch lapsed (a gap no notification covers), soonest lapsed first. */
export async function lapsedWatches(em: Sql, limit: number): Promise<string[]> {
  const rows = await select<{ account_id: string }>(em, 'select account_id from sync_states where watch_expires_at < now() order by watch_expires_at limit ?', [limit]);
  return rows.map((r) => r.account_id);
}

/**
 * Accounts whose notifications cannot be trusted: the watch expired, or nothing was heard
 * and nothing synced for `staleSeconds` (an account never synced counts from its row's last
 * change, so one whose every notification was lost is still covered); accounts whose listing
 * was left half-done for `listingLeftSeconds`; accounts with set-aside messages due.
 */
export async function staleAccounts(em: Sql, staleSeconds: number, listingLeftSeconds: number, limit: number): Promise<string[]> {
  const rows = await select<{ account_id: string }>(
    em,
    `select s.account_id from sync_states s
       join credentials c on c.account_id = s.account_id
       join accounts a on a.id = s.account_id
      where not a.needs_reconnect
        and ((s.watch_expires_at is not null and s.watch_expires_at < now())
          or coalesce(greatest(s.last_notification_at, s.last_synced_at), s.updated_at) < now() - make_interval(secs => ?)
          or (s.full_sync_active and coalesce(s.last_synced_at, s.updated_at) < now() - make_interval(secs => ?))
          or exists (select 1 from mail_set_aside x where x.account_id = s.account_id and x.retry_after <= now()))
      order by s.last_synced_at nulls first limit ?`,
    [staleSeconds, listingLeftSeconds, limit],
  );
  return rows.map((r) => r.account_id);
}


export interface NotifiedAccount {
  id: string;
  /** The history id up to which the stored copy is complete (null: never synced, or a listing is in progress). */
  syncedThrough: string | null;
}

/** The connected account a notification's mailbox address names. */
export async function resolveNotifiedAccount(em: Sql, emailAddress: string): Promise<NotifiedAccount | null> {
  const rows = await select<{ id: string; history_id: string | null; full_sync_active: boolean }>(
    em,
    `select a.id, s.history_id::text as history_id, coalesce(s.full_sync_active, false) as full_sync_active
       from accounts a join credentials c on c.account_id = a.id left join sync_states s on s.account_id = a.id
      where lower(a.email) = ? and not a.needs_reconnect order by a.updated_at desc limit 1`,
    [emailAddress.toLowerCase()],
  );
  const row = rows[0];
  if (!row) return null;
  // During a listing the checkpoint is where the listing started, not how far the store is complete.
  return { id: row.id, syncedThrough: row.full_sync_active ? null : row.history_id };
}

/** The account's notifications arrive (the quiet sweep leaves it alone meanwhile). */
export async function noteNotification(em: Sql, accountId: string): Promise<void> {
  await em.execute('update sync_states set last_notification_at = now() where account_id = ?', [accountId], 'run');
}

/** A background sync reached the provider's state: the failure it recorded is over. */
export async function recordSyncSuccess(em: Sql, accountId: string): Promise<void> {
  await em.execute('update sync_states set last_error_code = null, failing_since = null, dead_lettered_at = null where account_id = ? and last_error_code is not null', [accountId], 'run');
}

/** A background sync failed with `code`; `deadLettered`: its job ran out of retries. */
export async function recordSyncFailure(em: Sql, accountId: string, code: string, deadLettered: boolean): Promise<void> {
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
  const [row] = await select<{ lag: number; backlog: number; dead_lettered: number; watches_expiring: number; set_aside: number; set_aside_oldest: number }>(
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
