/**
 * What a listing under way reads of the store and of its own ids (mail_listing), and what it
 * writes of them in the sync's commit (mail-store.ts's applyChanges calls recordListing).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { executeBound } from '../../bound-sql.ts';

/** What a sync call writes of its listing (part of mail-store.ts's StoreChanges). */
export interface ListingWrites {
  /** Listed as unread (a resync's first phase; anywhere but spam and trash): recorded for the stored ones. */
  listedUnread?: string[];
  /** A page of inbox ids (positions newest first; `pending`: still to fetch); stored ones not rewritten since `since` are relabelled from the ids. */
  listedInbox?: { rows: { pmid: string; pos: number; pending: boolean; thread?: string }[]; since: string };
  /** Ids a resync lists outside the inbox; stored ones outside it that nothing rewrote since `since` are relabelled read or unread from the unread listing. */
  listedOutside?: { ids: string[]; since: string };
  /** Listed ids fetched (or set aside) by this call: no longer pending. */
  listingFetched?: string[];
  /** Listed ids the provider no longer had when they were fetched. */
  listingDrop?: string[];
  /** The listing ended: its ids go. */
  listingDone?: boolean;
  /** A new listing begins: an earlier one's ids go before this call's are recorded. */
  listingReplace?: boolean;
}

const uniq = <T>(xs: Iterable<T>) => [...new Set(xs)];

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
export async function knownListed(
  em: EntityManager,
  accountId: string,
  ids: string[],
  since: string,
  unreadNow: string[],
  own: boolean,
): Promise<Map<string, boolean>> {
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
 * be planned from statistics that lag a fast-growing backfill (seconds a call, bench/results/HISTORY.md).
 */
/** Pending ids looked at for thread-mates (one listing page): bounded, served by the pending index. */
const LOOKAHEAD = 500;

export async function unknownListed(
  em: EntityManager,
  accountId: string,
  limit: number,
): Promise<{ pmid: string; thread: string | null }[]> {
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
 * Stored messages in the inbox (or outside it) that the listing did not name there
 * (`listedNow`: named by this call, not recorded yet; `own` as for knownListed) and that
 * nothing rewrote since it began.
 */
export async function unnamedStored(
  em: EntityManager,
  accountId: string,
  place: 'inbox' | 'outside',
  since: string,
  listedNow: string[],
  limit: number,
  own: boolean,
): Promise<string[]> {
  const rows = await em.execute<{ pmid: string }[]>(
    `select m.provider_message_id as pmid from mail_messages m
      where m.account_id = ? and m.in_inbox = ? and m.updated_at < ?::timestamptz and m.provider_message_id <> all(array[?]::text[])
        and not (?::boolean and exists (select 1 from mail_listing l where l.account_id = m.account_id and l.provider_message_id = m.provider_message_id and l.${place}))
        and not exists (select 1 from mail_set_aside s where s.account_id = m.account_id and s.provider_message_id = m.provider_message_id and s.attempts > 1)
      order by m.provider_message_id limit ?`,
    [accountId, place === 'inbox', since, listedNow, own, limit],
  );
  return rows.map((r) => r.pmid);
}

/** Whether any stored message outside the inbox is older than the listing (else a resync has nothing there to reconcile). */
export async function staleOutside(em: EntityManager, accountId: string, since: string): Promise<boolean> {
  const rows = await em.execute<unknown[]>(
    'select 1 from mail_messages where account_id = ? and not in_inbox and updated_at < ?::timestamptz limit 1',
    [accountId, since],
  );
  return rows.length > 0;
}

/**
 * Records a listing's ids (in the sync's commit, mail-store.ts); stored messages of an inbox
 * page that nothing rewrote since the listing began are relabelled from the ids: in the inbox,
 * unread when the unread listing named them (their other labels kept); so are the stored ones a
 * resync names outside the inbox (read or unread). Returns the threads of relabelled messages.
 */
export async function recordListing(em: EntityManager, accountId: string, c: ListingWrites): Promise<string[]> {
  if (c.listingReplace) await clearListing(em, accountId);
  if (c.listedUnread?.length) {
    await em.execute(
      // Only the stored ones: a message fetched later comes with its labels.
      `insert into mail_listing (account_id, provider_message_id, unread)
       select m.account_id, m.provider_message_id, true from mail_messages m where m.account_id = ? and m.provider_message_id = any(array[?]::text[])
       on conflict (account_id, provider_message_id) do update set unread = true`,
      [accountId, uniq(c.listedUnread)],
      'run',
    );
  }
  let touched: string[] = [];
  if (c.listedInbox?.rows.length) {
    const rows = await executeBound<{ thread_id: string }>(
      em,
      `with x as (select * from jsonb_to_recordset(?::jsonb) as x(pmid text, pos int, pending boolean, thread text)),
       listed as (
         insert into mail_listing as l (account_id, provider_message_id, pos, inbox, pending, provider_thread_id) select ?::uuid, x.pmid, x.pos, true, x.pending, x.thread from x
         on conflict (account_id, provider_message_id) do update set inbox = true, pos = excluded.pos, pending = excluded.pending,
           provider_thread_id = coalesce(excluded.provider_thread_id, l.provider_thread_id)
         returning l.provider_message_id as pmid, l.unread
       ), want as (
         select m.id, array_remove(array_remove(m.label_ids, 'INBOX'), 'UNREAD') || array['INBOX'] || case when l.unread then array['UNREAD'] else array[]::text[] end as labels
         from listed l join mail_messages m on m.account_id = ?::uuid and m.provider_message_id = l.pmid
         where m.updated_at < ?::timestamptz and (not m.in_inbox or m.is_unread <> l.unread)
       )
       update mail_messages m set label_ids = want.labels, in_inbox = true, is_unread = 'UNREAD' = any(want.labels), updated_at = now()
       from want where m.id = want.id
       returning m.thread_id`,
      [JSON.stringify(c.listedInbox.rows), accountId, accountId, c.listedInbox.since],
    );
    touched = rows.map((r) => r.thread_id);
  }
  if (c.listedOutside?.ids.length)
    touched.push(...(await recordOutside(em, accountId, uniq(c.listedOutside.ids), c.listedOutside.since)));
  // The listing ended (perhaps in the call that listed its last page, whose relabelling used its rows): its ids go.
  if (c.listingDone) await clearListing(em, accountId);
  else {
    if (c.listingDrop?.length) {
      await em.execute(
        'delete from mail_listing where account_id = ? and provider_message_id = any(array[?]::text[])',
        [accountId, uniq(c.listingDrop)],
        'run',
      );
    }
    if (c.listingFetched?.length) {
      await em.execute(
        'update mail_listing set pending = false where account_id = ? and pending and provider_message_id = any(array[?]::text[])',
        [accountId, uniq(c.listingFetched)],
        'run',
      );
    }
  }
  return touched;
}

/**
 * Stored messages outside the inbox that a resync's listing names there (and nothing rewrote
 * since it began): recorded as named, and made read or unread as the unread listing says.
 */
async function recordOutside(em: EntityManager, accountId: string, ids: string[], since: string): Promise<string[]> {
  const rows = await executeBound<{ thread_id: string }>(
    em,
    `with named as (
       select m.id, m.provider_message_id as pmid, coalesce(l.unread, false) as unread, m.is_unread
       from mail_messages m left join mail_listing l on l.account_id = m.account_id and l.provider_message_id = m.provider_message_id
       where m.account_id = ?::uuid and m.provider_message_id = any(?::text[]) and not m.in_inbox and m.updated_at < ?::timestamptz
     ), recorded as (
       insert into mail_listing (account_id, provider_message_id, outside) select ?::uuid, pmid, true from named
       on conflict (account_id, provider_message_id) do update set outside = true
     )
     update mail_messages m set label_ids = array_remove(m.label_ids, 'UNREAD') || case when n.unread then array['UNREAD'] else array[]::text[] end,
       is_unread = n.unread, updated_at = now()
     from named n where m.id = n.id and n.is_unread <> n.unread
     returning m.thread_id`,
    [accountId, ids, since, accountId],
  );
  return rows.map((r) => r.thread_id);
}
