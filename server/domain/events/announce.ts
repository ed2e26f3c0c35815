/**
 * Live events, the writing side: a change is recorded in the account's event log
 * (`mail_events`) and announced with `pg_notify` by the transaction that commits it, so a
 * listener hears it only after the commit (and never hears a change rolled back). The
 * notification carries ids only (well under PostgreSQL's 8,000-byte limit). Each account's
 * log keeps its newest KEEP_PER_ACCOUNT rows: a stream resumed from an older id gets `reset`.
 * A per-account transaction lock orders the log: ids of one account commit in id order.
 */
import type { StoreChanges } from '../mail/mail-store.ts';

/** What runs a statement: a forked EntityManager (inside its transaction, if any). */
export interface Sql {
  execute(query: string, params?: unknown[], method?: 'all' | 'get' | 'run'): Promise<unknown>;
}

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

const rows = async <T>(em: Sql, query: string, params: unknown[]): Promise<T[]> => (await em.execute(query, params)) as T[];

/** Records one event of the account and announces it; returns its id. */
async function record(em: Sql, accountId: string, kind: LoggedKind, threadIds: string[] | null = null): Promise<string> {
  const ids = threadIds ? JSON.stringify(threadIds) : null;
  const [row] = await rows<{ id: string }>(
    em,
    `with l as (select pg_advisory_xact_lock(hashtextextended('mail_events:' || ?::text, 0)) as locked),
     e as (insert into mail_events (account_id, kind, thread_ids)
           select ?::uuid, ?, (select array_agg(x::uuid) from jsonb_array_elements_text(?::jsonb) x) from l returning id),
     p as (delete from mail_events where account_id = ?::uuid and id <= (select id from mail_events where account_id = ?::uuid order by id desc offset ? limit 1))
     select e.id::text as id, pg_notify(?, json_build_object('a', ?::text, 'k', ?::text, 'i', e.id::text, 't', ?::jsonb)::text) from e`,
    [accountId, accountId, kind, ids, accountId, accountId, KEEP_PER_ACCOUNT - 1, EVENTS_CHANNEL, accountId, kind, ids],
  );
  return row!.id;
}

/**
 * Inside the sync's transaction, after its changes are applied: the threads it touched (their
 * rows carry the transaction's `now()`), or a reset when a thread may have gone (a message
 * deleted) or more than MAX_THREAD_IDS changed.
 */
export async function announceThreads(tx: Sql, accountId: string, changes: Pick<StoreChanges, 'deletes'>): Promise<void> {
  if (changes.deletes.length) {
    await record(tx, accountId, 'reset');
    return;
  }
  const touched = await rows<{ id: string }>(tx, 'select id from mail_threads where account_id = ? and updated_at = now() limit ?', [accountId, MAX_THREAD_IDS + 1]);
  if (!touched.length) return;
  if (touched.length > MAX_THREAD_IDS) await record(tx, accountId, 'reset');
  else await record(tx, accountId, 'threads', touched.map((r) => r.id));
}

/** Inside the sync's transaction, after its changes: the threads it changed, then where the account stands. */
export async function announceCommit(tx: Sql, accountId: string, changes: Pick<StoreChanges, 'deletes'>): Promise<void> {
  await announceThreads(tx, accountId, changes);
  await announceSync(tx, accountId);
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
