/**
 * Live events, the reading side: where an account's event log stands, what it holds since an
 * id (for a resumed stream), and the account's sync state as a `sync` event reports it.
 */
import { toIso } from '../time.ts';
import { select, type Sql } from '../sql.ts';
import { announceSync, type LoggedKind } from './announce.ts';

export interface LoggedEvent {
  id: string;
  kind: LoggedKind;
  threadIds: string[] | null;
}

export type SyncPhase = 'backfilling' | 'current' | 'catching_up' | 'needs_reconnect';

export interface SyncSnapshot {
  state: SyncPhase;
  lastSyncedAt: string | null;
  progress: { stored: number; estimatedTotal: number | null } | null;
  /** While bulk work waits for the deployment's daily mail quota: until when. */
  quotaWaitUntil?: string;
}

/** The id of the account's newest event (one is recorded when the log is empty, so a stream always has a position). */
export async function latestEventId(em: Sql, accountId: string): Promise<string> {
  const [row] = await select<{ id: string | null }>(
    em,
    'select max(id)::text as id from mail_events where account_id = ?',
    [accountId],
  );
  if (row?.id) return row.id;
  await announceSync(em, accountId);
  const [made] = await select<{ id: string | null }>(
    em,
    'select max(id)::text as id from mail_events where account_id = ?',
    [accountId],
  );
  // Nothing recorded: the account is gone (its stream's session with it).
  return made?.id ?? '0';
}

/**
 * The account's events after `afterId`, oldest first; `known` false when `afterId` is not
 * (or no longer) in the account's log, so what came after it cannot be told.
 */
export async function eventsSince(
  em: Sql,
  accountId: string,
  afterId: string,
): Promise<{ known: boolean; events: LoggedEvent[] }> {
  if (!/^[1-9]\d{0,17}$/.test(afterId)) return { known: false, events: [] };
  const found = await select<{ id: string; kind: LoggedKind; thread_ids: string[] | null }>(
    em,
    // By the column, not the text alias (which would put '10' before '9').
    'select id::text as id, kind, thread_ids from mail_events where account_id = ? and id >= ?::bigint order by mail_events.id',
    [accountId, afterId],
  );
  if (found[0]?.id !== afterId) return { known: false, events: [] };
  return { known: true, events: found.slice(1).map((r) => ({ id: r.id, kind: r.kind, threadIds: r.thread_ids })) };
}

/**
 * Where the account stands: needs_reconnect (no usable grant), backfilling (no complete copy
 * yet, or a full listing under way; with the inbox messages stored so far and, when it was
 * read, the provider's count as the estimated total), catching_up (a notification arrived
 * since the last sync), else current.
 */
export async function syncSnapshot(em: Sql, accountId: string): Promise<SyncSnapshot> {
  const [row] = await select<{
    needs_reconnect: boolean;
    connected: boolean;
    full_sync_active: boolean | null;
    last_synced_at: Date | null;
    notified: boolean;
    history_id: string | null;
    inbox_estimate: number | null;
    quota_wait: Date | null;
  }>(
    em,
    `select a.needs_reconnect, exists (select 1 from credentials c where c.account_id = a.id) as connected,
            s.full_sync_active, s.last_synced_at, s.history_id::text as history_id, s.inbox_estimate,
            coalesce(s.last_notification_at > coalesce(s.last_synced_at, '-infinity'), false) as notified,
            case when s.quota_wait_until > now() then s.quota_wait_until end as quota_wait
       from accounts a left join sync_states s on s.account_id = a.id where a.id = ?`,
    [accountId],
  );
  const lastSyncedAt = row?.last_synced_at ? toIso(row.last_synced_at) : null;
  if (!row || row.needs_reconnect || !row.connected) return { state: 'needs_reconnect', lastSyncedAt, progress: null };
  if (row.full_sync_active || !row.history_id) {
    const [count] = await select<{ n: number }>(
      em,
      'select count(*)::int as n from mail_messages where account_id = ? and in_inbox',
      [accountId],
    );
    const stored = count?.n ?? 0;
    // The provider's inbox count read when the listing began (labels/INBOX); mail that arrived since can take stored past it.
    const estimatedTotal = row.inbox_estimate == null ? null : Math.max(row.inbox_estimate, stored);
    return {
      state: 'backfilling',
      lastSyncedAt,
      progress: { stored, estimatedTotal },
      ...(row.quota_wait ? { quotaWaitUntil: toIso(row.quota_wait) } : {}),
    };
  }
  // Catching up: a notification came since the last sync. Not "a sync holds the lease": a call that finds
  // nothing announces nothing, so a state read while the next call of a drain ran would stay catching_up.
  return { state: row.notified ? 'catching_up' : 'current', lastSyncedAt, progress: null };
}

/**
 * The event logs of disconnected accounts (no provider grant): no stream reads them (disconnect ends
 * the account's streams), and without this each kept its last KEEP_PER_ACCOUNT rows forever; a
 * reconnect starts a fresh log (latestEventId), so a stream resumed from an old id gets `reset`.
 */
export async function purgeDisconnectedLogs(em: Sql): Promise<number> {
  const [row] = await select<{ n: number }>(
    em,
    'with d as (delete from mail_events e where not exists (select 1 from credentials c where c.account_id = e.account_id) returning 1) select count(*)::int as n from d',
  );
  return row?.n ?? 0;
}
