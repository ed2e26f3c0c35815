/**
 * The account's row as the mail watch and the scheduled jobs see it: made at sign-in, the
 * watch's expiry and last renewal, and the renewal's own next-try time. A renewal that fails
 * waits a growing delay (WATCH_RETRY_*), so a few broken accounts never take every slot of a
 * run; an account the provider has no mailbox for is left out until it signs in again.
 */
import { select, type Sql } from './sql.ts';

/** The first delay after a failed renewal, doubling per failure in a row up to a day. */
export const WATCH_RETRY_FIRST_SECONDS = 600;
export const WATCH_RETRY_MAX_SECONDS = 86_400;

/** The account's row, made at sign-in; signing in again gives a broken account a fresh start. */
export async function createSyncState(em: Sql, accountId: string): Promise<void> {
  await em.execute(
    `insert into sync_states (account_id) values (?) on conflict (account_id) do update
       set watch_failures = 0, watch_retry_at = null, next_sweep_at = null, no_mailbox_at = null`,
    [accountId],
    'run',
  );
}

/** An array parameter as PostgreSQL's array literal (the ORM would spread a JS array into a list). */
const pgArray = (items: readonly string[]) => `{${items.map((x) => `"${x}"`).join(',')}}`;

/**
 * Records registered watches, each only while its account is still connected; returns the
 * accounts recorded (a watch of one that no longer is must be stopped again by the caller).
 */
export async function recordWatches(
  em: Sql,
  made: readonly { accountId: string; expiresAt: Date }[],
  renewedAt: Date,
): Promise<Set<string>> {
  if (!made.length) return new Set();
  const kept = await select<{ account_id: string }>(
    em,
    `update sync_states s set watch_expires_at = v.expires_at, watch_renewed_at = ?::timestamptz, watch_failures = 0, watch_retry_at = null
       from (select unnest(?::uuid[]) as account_id, unnest(?::timestamptz[]) as expires_at) v
      where s.account_id = v.account_id
        and exists (select 1 from credentials c join accounts a on a.id = c.account_id where c.account_id = s.account_id and not a.needs_reconnect)
      returning s.account_id`,
    [renewedAt, pgArray(made.map((m) => m.accountId)), pgArray(made.map((m) => m.expiresAt.toISOString()))],
  );
  return new Set(kept.map((r) => r.account_id));
}

/**
 * Renewals failed: each account's next try waits WATCH_RETRY_FIRST_SECONDS, doubling per
 * failure in a row up to WATCH_RETRY_MAX_SECONDS. Those in `noMailbox` (the provider has no
 * mailbox for them) leave renewal and the sweep, their watch fields cleared, until they sign in again.
 */
export async function recordWatchFailures(
  em: Sql,
  accountIds: readonly string[],
  noMailbox: readonly string[],
  now: Date,
): Promise<void> {
  if (!accountIds.length) return;
  await em.execute(
    `update sync_states set watch_failures = watch_failures + 1,
       watch_retry_at = ?::timestamptz + make_interval(secs => least(?::float8 * power(2, least(watch_failures, 20)), ?::float8)),
       no_mailbox_at = case when account_id = any(?::uuid[]) then ?::timestamptz else no_mailbox_at end,
       watch_expires_at = case when account_id = any(?::uuid[]) then null else watch_expires_at end,
       watch_renewed_at = case when account_id = any(?::uuid[]) then null else watch_renewed_at end
     where account_id = any(?::uuid[])`,
    [
      now,
      WATCH_RETRY_FIRST_SECONDS,
      WATCH_RETRY_MAX_SECONDS,
      pgArray(noMailbox),
      now,
      pgArray(noMailbox),
      pgArray(noMailbox),
      pgArray(accountIds),
    ],
    'run',
  );
}

/** The account's row as the driver gives it: times and history ids (bigint) as PostgreSQL's text. */
export interface SyncStateRow {
  account_id: string;
  history_id: string | null;
  full_sync_page_token: string | null;
  full_sync_active: boolean;
  last_synced_at: string | null;
  lease_owner: string | null;
  lease_until: string | null;
  watch_expires_at: string | null;
  watch_renewed_at: string | null;
  watch_failures: number;
  watch_retry_at: string | null;
  next_sweep_at: string | null;
  no_mailbox_at: string | null;
  last_notification_at: string | null;
  notified_history_id: string | null;
  inbox_estimate: number | null;
  last_error_code: string | null;
  failing_since: string | null;
  dead_lettered_at: string | null;
}

/** The whole row, null when there is none: what tests read (the sync reads only what each step needs). */
export async function readSyncStateRow(em: Sql, accountId: string): Promise<SyncStateRow | null> {
  const rows = await select<SyncStateRow>(em, 'select * from sync_states where account_id = ?', [accountId]);
  return rows[0] ?? null;
}

/** Every account's row, by account id: what tests of a single-account world or a whole-store check read. */
export const readSyncStateRows = (em: Sql): Promise<SyncStateRow[]> =>
  select<SyncStateRow>(em, 'select * from sync_states order by account_id');

export async function readWatchExpiry(em: Sql, accountId: string): Promise<Date | null> {
  const rows = await select<{ watch_expires_at: Date | null }>(
    em,
    'select watch_expires_at from sync_states where account_id = ?',
    [accountId],
  );
  const v = rows[0]?.watch_expires_at;
  return v ? new Date(v) : null;
}

/** The watch is gone (stopped, or the grant with it): nothing to renew and nothing lapsed. */
export async function clearWatch(em: Sql, accountId: string): Promise<void> {
  await em.execute(
    'update sync_states set watch_expires_at = null, watch_renewed_at = null where account_id = ?',
    [accountId],
    'run',
  );
}

/** Accounts that must reconnect keep no watch fields: the provider dropped their watch with the grant. */
export async function clearWatchesOfDisconnected(em: Sql): Promise<number> {
  const rows = await select<unknown>(
    em,
    `update sync_states s set watch_expires_at = null, watch_renewed_at = null
       from accounts a where a.id = s.account_id and a.needs_reconnect and s.watch_expires_at is not null
      returning s.account_id`,
  );
  return rows.length;
}

export interface DueWatch {
  accountId: string;
  /** The watch had lapsed (or there was none): a gap no notification covers. */
  lapsed: boolean;
}

/**
 * Connected accounts with a mailbox whose watch was last renewed before `renewedBefore` (or
 * never) or lapses before `expiresBefore`, and whose next try is due; by next-try time
 * (a failed renewal's retry time, else its last renewal; never renewed first).
 */
export async function watchesDue(
  em: Sql,
  now: Date,
  renewedBefore: Date,
  expiresBefore: Date,
  limit: number,
): Promise<DueWatch[]> {
  const rows = await select<{ account_id: string; lapsed: boolean }>(
    em,
    `select s.account_id, (s.watch_expires_at is null or s.watch_expires_at < ?) as lapsed
       from sync_states s join credentials c on c.account_id = s.account_id join accounts a on a.id = s.account_id
      where not a.needs_reconnect and s.no_mailbox_at is null
        and (s.watch_retry_at is null or s.watch_retry_at <= ?)
        and (s.watch_renewed_at is null or s.watch_renewed_at < ? or s.watch_expires_at < ?)
      order by coalesce(s.watch_retry_at, s.watch_renewed_at) nulls first, s.account_id limit ?`,
    [now, now, renewedBefore, expiresBefore, limit],
  );
  return rows.map((r) => ({ accountId: r.account_id, lapsed: r.lapsed }));
}
