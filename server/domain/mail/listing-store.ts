/**
 * What a listing under way reads of the store and of its own ids (mail_listing); its writes
 * go with the sync's commit (mail-store.ts).
 */
import type { EntityManager } from '@mikro-orm/postgresql';

/** Drops a listing's ids: it ended, or a new one replaces it (in the commit of the new one's first call). */
export async function clearListing(em: EntityManager, accountId: string): Promise<void> {
  await em.execute('delete from mail_listing where account_id = ?', [accountId], 'run');
}

/**
 * Ids of listings no longer under way: the account's sync state says no listing runs, or the
 * account was disconnected in the middle of one (a reconnect lists again). A listing's ids are read
 * only while it runs, and a new one replaces them; its first commit writes its ids and its state
 * together, so none under way is cut.
 */
export async function purgeEndedListings(em: EntityManager): Promise<number> {
  const [row] = await em.execute<{ n: number }[]>(
    `with d as (delete from mail_listing l
       where not exists (select 1 from sync_states s where s.account_id = l.account_id and s.full_sync_active)
          or not exists (select 1 from credentials c where c.account_id = l.account_id) returning 1)
     select count(*)::int as n from d`,
  );
  return row?.n ?? 0;
}

/**
 * Of these listed ids, those the listing will not fetch: stored ones (mapped to whether the
 * listing relabels them: nothing rewrote them since it began, and their inbox or unread state
 * differs from the listing's) and set-aside ones (mapped to false; their retries are their own).
 * `own`: the stored ids are this listing's (false in its first call: they are an older one's).
 */
export async function knownListed(em: EntityManager, accountId: string, ids: string[], since: string, unreadNow: string[], own: boolean): Promise<Map<string, boolean>> {
  if (!ids.length) return new Map();
  const rows = await em.execute<{ pmid: string; relabel: boolean }[]>(
    `select m.provider_message_id as pmid,
       (m.updated_at < ?::timestamptz and (not m.in_inbox or m.is_unread <> (coalesce(l.unread, false) or m.provider_message_id = any(array[?]::text[])))) as relabel
     from mail_messages m left join mail_listing l on ?::boolean and l.account_id = m.account_id and l.provider_message_id = m.provider_message_id
     where m.account_id = ? and m.provider_message_id = any(array[?]::text[])
     union all
     select provider_message_id, false from mail_set_aside where account_id = ? and attempts > 1 and provider_message_id = any(array[?]::text[])`,
    [since, unreadNow, own, accountId, ids, accountId, ids],
  );
  return new Map(rows.map((r) => [r.pmid, r.relabel]));
}

/**
 * Listed inbox ids the store did not know and no call has fetched yet, in listing order, with
 * their threads when the listing page named them (a thread's messages can then come in one read). Read
 * from the listing alone (its `pending` flag, a partial index): a join with the store would
 * be planned from statistics that lag a fast-growing backfill (measured: 16 s at 8,000 of 20,000).
 */
/** Pending ids looked at for thread-mates (one listing page): bounded, served by the pending index. */
const LOOKAHEAD = 500;

export async function unknownListed(em: EntityManager, accountId: string, limit: number): Promise<{ pmid: string; thread: string | null }[]> {
  // Within the next LOOKAHEAD pending ids, a thread's ids come together, at its newest one's place:
  // a call then holds whole threads, which it can read at one threads.get each (gmail-metadata.ts).
  return em.execute<{ pmid: string; thread: string | null }[]>(
    `select pmid, thread from (
       select provider_message_id as pmid, provider_thread_id as thread, pos from mail_listing
        where account_id = ? and pending order by pos limit ${LOOKAHEAD}) x
      order by min(pos) over (partition by coalesce(thread, pmid)), pos limit ?`,
    [accountId, limit],
  );
}

/**
 * Stored inbox messages the listing did not name (`listedNow`: named by this call, not
 * recorded yet; `own` as for knownListed) and nothing rewrote since it began.
 */
export async function unnamedInbox(em: EntityManager, accountId: string, since: string, listedNow: string[], limit: number, own: boolean): Promise<string[]> {
  const rows = await em.execute<{ pmid: string }[]>(
    `select m.provider_message_id as pmid from mail_messages m
      where m.account_id = ? and m.in_inbox and m.updated_at < ?::timestamptz and m.provider_message_id <> all(array[?]::text[])
        and not (?::boolean and exists (select 1 from mail_listing l where l.account_id = m.account_id and l.provider_message_id = m.provider_message_id and l.inbox))
        and not exists (select 1 from mail_set_aside s where s.account_id = m.account_id and s.provider_message_id = m.provider_message_id and s.attempts > 1)
      order by m.provider_message_id limit ?`,
    [accountId, since, listedNow, own, limit],
  );
  return rows.map((r) => r.pmid);
}
