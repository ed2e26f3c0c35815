/**
 * One sync per account across every instance: a lease on the account's sync_states row
 * (lease_owner, lease_until), taken with one conditional upsert and never held inside an
 * open transaction while the provider is called (a session advisory lock through the
 * pool would leak). The checkpoint is written only by the lease holder (fencing): a sync
 * that outlived its lease cannot overwrite the work of the one that took over. The lease is
 * short and kept alive by its holder: a sync may run as long as it needs, and a holder that
 * died lets go within LEASE_SECONDS.
 */
import { toIso } from '../../../time.ts';
import { select, type Sql } from './sql.ts';

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
  /** A notification arrived since the last completed sync (the account is catching up). */
  behind: boolean;
}

export interface Checkpoint {
  /** The address the provider gives the mailbox, when this sync read it (a listing's profile call). */
  mailboxAddress?: string;
  historyId: string | null;
  cursor: string | null;
  fullSyncActive: boolean;
  lastSyncedAt: Date;
  /** A listing began: the provider's inbox count for its progress (null: unknown); undefined: unchanged. */
  inboxEstimate?: number | null;
}

/**
 * Takes the lease (creating the row on first use); null when another sync holds it or the
 * account is gone. The account row is locked first (key share), as every writer of its rows
 * does: a deletion in flight is waited for, and its account is then not found, instead of
 * the row's insert failing on its foreign key.
 */
export async function acquireLease(
  em: Sql,
  accountId: string,
  owner: string,
  seconds = LEASE_SECONDS,
): Promise<LeasedState | null> {
  const rows = await select<{
    history_id: string | null;
    full_sync_page_token: string | null;
    full_sync_active: boolean;
    last_synced_at: Date | null;
    db_now: Date;
    set_aside_due: boolean;
    behind: boolean;
  }>(
    em,
    `with a as (select id from accounts where id = ? for key share)
     insert into sync_states as s (account_id, lease_owner, lease_until) select a.id, ?, now() + make_interval(secs => ?) from a
     on conflict (account_id) do update set lease_owner = excluded.lease_owner, lease_until = excluded.lease_until, updated_at = now()
       where s.lease_until is null or s.lease_until < now()
     returning s.history_id::text as history_id, s.full_sync_page_token, s.full_sync_active, s.last_synced_at, now() as db_now,
       exists (select 1 from mail_set_aside a where a.account_id = s.account_id and a.retry_after <= now()) as set_aside_due,
       coalesce(s.last_notification_at > coalesce(s.last_synced_at, '-infinity'), false) as behind`,
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
    behind: r.behind,
  };
}

/**
 * Moves the checkpoint and releases the lease; null when the lease was lost or the account
 * is gone (the caller must roll back), else whether a notification was noted since `leasedAt`
 * (the lease's database time: the sync may have read the provider before it, and its commit
 * may end the account's catching up all the same). The account row is locked first (key
 * share, which only a deletion waits for): the one lock order of every transaction writing an
 * account's rows, so a deletion's cascade and a sync's commit queue up instead of deadlocking.
 */
export async function commitCheckpoint(
  em: Sql,
  accountId: string,
  owner: string,
  c: Checkpoint,
  leasedAt?: string,
): Promise<{ notifiedSinceLease: boolean } | null> {
  const rows = await select<{ notified: boolean }>(
    em,
    `with a as (select id from accounts where id = ? for key share)
     update sync_states s set history_id = ?::bigint, full_sync_page_token = ?, full_sync_active = ?, last_synced_at = ?::timestamptz,
       mailbox_address = coalesce(?, s.mailbox_address), inbox_estimate = case when ?::boolean then ?::int else s.inbox_estimate end,
       lease_owner = null, lease_until = null, updated_at = now()
     from a where s.account_id = a.id and s.lease_owner = ? returning coalesce(s.last_notification_at >= ?::timestamptz, false) as notified`,
    [
      accountId,
      c.historyId,
      c.cursor,
      c.fullSyncActive,
      c.lastSyncedAt.toISOString(),
      c.mailboxAddress ?? null,
      c.inboxEstimate !== undefined,
      c.inboxEstimate ?? null,
      owner,
      leasedAt ?? null,
    ],
  );
  return rows.length === 1 ? { notifiedSinceLease: rows[0]!.notified } : null;
}

/** Extends the lease while its owner holds it; false when it was lost (the commit will refuse). */
export async function extendLease(
  em: Sql,
  accountId: string,
  owner: string,
  seconds = LEASE_SECONDS,
): Promise<boolean> {
  const rows = await select<{ account_id: string }>(
    em,
    'update sync_states set lease_until = now() + make_interval(secs => ?) where account_id = ? and lease_owner = ? returning account_id',
    [seconds, accountId, owner],
  );
  return rows.length === 1;
}

export async function releaseLease(em: Sql, accountId: string, owner: string): Promise<void> {
  await em.execute(
    'update sync_states set lease_owner = null, lease_until = null where account_id = ? and lease_owner = ?',
    [accountId, owner],
    'run',
  );
}

/** The account's last sync and, while its bulk work waits for the deployment's daily quota budget, until when. */
export async function readSyncState(
  em: Sql,
  accountId: string,
): Promise<{ lastSyncedAt: string | null; quotaWaitUntil?: string }> {
  const rows = await select<{ last_synced_at: Date | null; wait: Date | null }>(
    em,
    'select last_synced_at, case when quota_wait_until > now() then quota_wait_until end as wait from sync_states where account_id = ?',
    [accountId],
  );
  const v = rows[0]?.last_synced_at;
  const wait = rows[0]?.wait;
  return { lastSyncedAt: v ? toIso(v) : null, ...(wait ? { quotaWaitUntil: toIso(wait) } : {}) };
}
