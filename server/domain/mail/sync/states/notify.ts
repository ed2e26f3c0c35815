/** What the notification intake reads and writes: the account a mailbox address names, and that its notifications arrive. */
import { announceSync } from '../../../events/announce.ts';
import { select, type Sql } from './sql.ts';

export interface NotifiedAccount {
  id: string;
  /** The history id up to which the stored copy is complete (null: never synced, or a listing is in progress). */
  syncedThrough: string | null;
}

/**
 * The connected account a notification's mailbox address names: the address the provider gave
 * the mailbox (recorded at its first listing), else, for a mailbox not listed yet, the sign-in email.
 */
export async function resolveNotifiedAccount(em: Sql, emailAddress: string): Promise<NotifiedAccount | null> {
  const address = emailAddress.toLowerCase();
  const rows = await select<{ id: string; history_id: string | null; full_sync_active: boolean }>(
    em,
    `select a.id, s.history_id::text as history_id, coalesce(s.full_sync_active, false) as full_sync_active
       from accounts a join credentials c on c.account_id = a.id left join sync_states s on s.account_id = a.id
      where not a.needs_reconnect and (lower(s.mailbox_address) = ? or (s.mailbox_address is null and lower(a.email) = ?))
      order by (s.mailbox_address is not null) desc, a.updated_at desc limit 1`,
    [address, address],
  );
  const row = rows[0];
  if (!row) return null;
  // During a listing the checkpoint is where the listing started, not how far the store is complete.
  return { id: row.id, syncedThrough: row.full_sync_active ? null : row.history_id };
}

/**
 * The account's notifications arrive (the quiet sweep leaves it alone meanwhile); `historyId`:
 * the highest one they named, the point the account's syncs aim for.
 */
export async function noteNotification(em: Sql, accountId: string, historyId: bigint | null = null): Promise<void> {
  const rows = await select<{ was_behind: boolean }>(
    em,
    `update sync_states s set last_notification_at = now(), notified_history_id = greatest(s.notified_history_id, ?::bigint)
       from (select last_notification_at > coalesce(last_synced_at, '-infinity') as behind
       from sync_states where account_id = ? for update) before where s.account_id = ? returning coalesce(before.behind, false) as was_behind`,
    [historyId === null ? null : String(historyId), accountId, accountId],
  );
  // The account starts catching up: open event streams hear it (once, not per notification).
  if (rows[0] && !rows[0].was_behind) await announceSync(em, accountId);
}
