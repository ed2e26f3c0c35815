/**
 * The quiet sweep's pick: accounts whose notifications cannot be trusted, each taken at most
 * once per its own next sweep time. A healthy account is swept again only after the period;
 * one whose sync keeps failing waits longer the longer it has failed (up to SWEEP_BACKOFF_MAX),
 * so a thousand broken accounts never fill every run.
 */
import { select, type Sql } from './sql.ts';

export const SWEEP_BACKOFF_MAX_SECONDS = 6 * 3600;

export interface SweepTiming {
  /** The database clock of this run (an injected clock in tests). */
  now: Date;
  /** Not heard of and not synced for this long: stale. */
  staleSeconds: number;
  /** A listing no job moved for this long was left half-done. */
  listingLeftSeconds: number;
  /** The sweep's period: a healthy account taken now is not taken again before it ends. */
  periodSeconds: number;
}

/**
 * Takes up to `limit` accounts due for a sweep, oldest next-sweep time first, and sets their
 * next one in the same statement (instances sweeping at once take different accounts):
 * connected accounts with a mailbox whose watch expired, or that nothing was heard of and
 * nothing synced for `staleSeconds` (an account never synced counts from its row's last
 * change, so one whose every notification was lost is still covered); whose listing was left
 * half-done; or with set-aside messages due.
 */
export async function takeStaleAccounts(em: Sql, t: SweepTiming, limit: number): Promise<string[]> {
  const rows = await select<{ account_id: string }>(
    em,
    `with due as (
       select s.account_id from sync_states s
         join credentials c on c.account_id = s.account_id
         join accounts a on a.id = s.account_id
        where not a.needs_reconnect and s.no_mailbox_at is null
          and (s.next_sweep_at is null or s.next_sweep_at <= ?::timestamptz)
          and ((s.watch_expires_at is not null and s.watch_expires_at < ?::timestamptz)
            or coalesce(greatest(s.last_notification_at, s.last_synced_at), s.updated_at) < ?::timestamptz - make_interval(secs => ?)
            or (s.full_sync_active and coalesce(s.last_synced_at, s.updated_at) < ?::timestamptz - make_interval(secs => ?))
            or exists (select 1 from mail_set_aside x where x.account_id = s.account_id and x.retry_after <= ?::timestamptz))
        order by s.next_sweep_at nulls first, s.last_synced_at nulls first, s.account_id
        limit ? for update of s skip locked)
     update sync_states s set next_sweep_at = ?::timestamptz + make_interval(secs => case when s.failing_since is null then ?::float8
         else least(greatest(extract(epoch from ?::timestamptz - s.failing_since), ?::float8), ?::float8) end)
       from due where s.account_id = due.account_id
     returning s.account_id`,
    [
      t.now,
      t.now,
      t.now,
      t.staleSeconds,
      t.now,
      t.listingLeftSeconds,
      t.now,
      limit,
      t.now,
      t.periodSeconds,
      t.now,
      t.periodSeconds,
      SWEEP_BACKOFF_MAX_SECONDS,
    ],
  );
  return rows.map((r) => r.account_id);
}
