/**
 * Live events, the writing side: a change is recorded in the account's event log
 * (`mail_events`) and announced with `pg_notify` by the transaction that commits it, so a
 * listener hears it only after the commit (and never hears a change rolled back). The
 * notification carries ids only (well under PostgreSQL's 8,000-byte limit). Each account's
 * log keeps its newest KEEP_PER_ACCOUNT rows: a stream resumed from an older id gets `reset`.
 * A per-account transaction lock orders the log: ids of one account commit in id order.
 */
import type { StoreChanges } from '../mail/mail-store.ts';
import { select, type Sql } from '../sql.ts';

export const EVENTS_CHANNEL = 'mia_mail_events';
/** Events kept per account for resuming. */
export const KEEP_PER_ACCOUNT = 256;
/** The most thread ids one event names (the schema's MAX_EVENT_THREAD_IDS); more: a reset. */
const MAX_THREAD_IDS = 100;

export type LoggedKind = 'sync' | 'threads' | 'reset';

/** What travels on the channel: a logged event of an account, or the end of streams. */
export type Notice =
  | { a: string; k: LoggedKind; i: string; t?: string[] | null }
  | { a: string | null; k: 'end'; s?: string };

/**
 * Records one event of the account and announces it; returns its id (null: the account is gone).
 * The account row first (key share), as every writer of an account's rows: a deletion in
 * flight is waited for (and then nothing is recorded) instead of meeting this statement's
 * trim of the log in its cascade, each waiting for the other. The trim runs after the insert.
 */
async function record(
  em: Sql,
  accountId: string,
  kind: LoggedKind,
  threadIds: string[] | null = null,
): Promise<string | null> {
  const ids = threadIds ? JSON.stringify(threadIds) : null;
  const [row] = await select<{ id: string }>(
    em,
    `with a as (select id from accounts where id = ?::uuid for key share),
     l as (select pg_advisory_xact_lock(hashtextextended('mail_events:' || a.id::text, 0)) as locked from a),
     e as (insert into mail_events (account_id, kind, thread_ids)
           select ?::uuid, ?, (select array_agg(x::uuid) from jsonb_array_elements_text(?::jsonb) x) from l returning id),
     p as (delete from mail_events where exists (select 1 from e) and account_id = ?::uuid
             and id <= (select id from mail_events where account_id = ?::uuid order by id desc offset ? limit 1))
     select e.id::text as id, pg_notify(?, json_build_object('a', ?::text, 'k', ?::text, 'i', e.id::text, 't', ?::jsonb)::text) from e`,
    [accountId, accountId, kind, ids, accountId, accountId, KEEP_PER_ACCOUNT - 1, EVENTS_CHANNEL, accountId, kind, ids],
  );
  return row?.id ?? null;
}

/**
 * Inside the sync's transaction, after its changes: the threads it touched (their rows carry
 * the transaction's `now()`), or a reset when a thread may have gone (a message deleted) or
 * more than MAX_THREAD_IDS changed; then where the account stands. One statement: the sync's
 * commit is on every notification's path.
 */
export async function announceCommit(
  tx: Sql,
  accountId: string,
  changes: Pick<StoreChanges, 'deletes'>,
): Promise<void> {
  await tx.execute(
    `with l as (select pg_advisory_xact_lock(hashtextextended('mail_events:' || ?::text, 0)) as locked),
     t as (select count(*)::int as n, array_agg(id) as ids from (select id from mail_threads where account_id = ?::uuid and updated_at = now() limit ?) x),
     k as (select case when ?::boolean or t.n > ? then 'reset' when t.n > 0 then 'threads' end as kind, t.ids from t),
     e as (insert into mail_events (account_id, kind, thread_ids)
           select ?::uuid, k.kind, case when k.kind = 'threads' then k.ids end from k, l where k.kind is not null
           union all select ?::uuid, 'sync', null from l
           returning id, kind, thread_ids),
     p as (delete from mail_events where account_id = ?::uuid and id <= (select id from mail_events where account_id = ?::uuid order by id desc offset ?::int - (select count(*)::int from e) limit 1))
     select pg_notify(?, json_build_object('a', ?::text, 'k', e.kind, 'i', e.id::text, 't', to_jsonb(e.thread_ids))::text) from (select * from e order by id) e`,
    // The trim's reading of the log is the statement's snapshot, without the one or two events it records: it keeps as many fewer.
    [
      accountId,
      accountId,
      MAX_THREAD_IDS + 1,
      changes.deletes.length > 0,
      MAX_THREAD_IDS,
      accountId,
      accountId,
      accountId,
      accountId,
      KEEP_PER_ACCOUNT,
      EVENTS_CHANNEL,
      accountId,
    ],
  );
}

/** Threads whose stored state changed outside a sync (a new or corrected analysis): one `threads` event after the commit. */
export async function announceThreads(em: Sql, accountId: string, threadIds: string[]): Promise<void> {
  await record(
    em,
    accountId,
    threadIds.length > MAX_THREAD_IDS ? 'reset' : 'threads',
    threadIds.length > MAX_THREAD_IDS ? null : threadIds,
  );
}

/** The account's sync state changed (checkpoint moved, listing started or finished, notified, reconnect needed). */
export async function announceSync(em: Sql, accountId: string): Promise<void> {
  await record(em, accountId, 'sync');
}

/** Ends streams on every instance: a session's (`session`: its stream key), or every stream of the account. */
export async function announceEnd(em: Sql, end: { accountId: string } | { session: string }): Promise<void> {
  const notice: Notice = 'session' in end ? { a: null, k: 'end', s: end.session } : { a: end.accountId, k: 'end' };
  await em.execute('select pg_notify(?, ?)', [EVENTS_CHANNEL, JSON.stringify(notice)]);
}
