/**
 * The stored side of the sync: set-based SQL, one statement per kind of write however many
 * messages a batch holds (rows travel as one JSON parameter through jsonb_to_recordset).
 * Keys are the provider's ids (unique per account), so replaying a batch changes nothing.
 * Statements carrying rows bind them as parameters (bound-sql.ts), never inline them.
 * Thread aggregates are recomputed from the stored messages of the threads a batch touched.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { MessageMeta, PackedMessage } from '../../providers/gmail.ts';
import { SANITIZER_VERSION } from '../../providers/mail/message-body.ts';
import { executeBound } from '../bound-sql.ts';
import { recordListing, type ListingWrites } from './sync/listing-store.ts';
import { recordSetAside, type SetAside } from './sync/set-aside.ts';

export type { SetAside };

/** A sync call's writes, its listing's included (listing-store.ts). */
export interface StoreChanges extends ListingWrites {
  upserts: MessageMeta[];
  /** Messages set aside by this sync (their record's attempts count up, its retry time moves on). */
  setAside?: SetAside[];
  /** Set-aside messages the provider no longer has: their records go. */
  setAsideGone?: string[];
  /** Set-aside messages retried and stored: their records go. */
  setAsideRecovered?: string[];
  /** Stored messages whose labels changed: their new full label set. */
  labelChanges: { providerMessageId: string; labelIds: string[] }[];
  deletes: string[];
}

export const uniq = <T>(xs: Iterable<T>) => [...new Set(xs)];

export const noChanges = (): StoreChanges => ({ upserts: [], labelChanges: [], deletes: [] });

/**
 * Locks the account row (key share: only a deletion waits for it), first thing in a
 * transaction that writes the account's rows: one lock order with the deletion's cascade,
 * so the two wait for each other instead of deadlocking. False: the account is gone.
 */
export async function lockAccount(em: EntityManager, accountId: string): Promise<boolean> {
  const rows = await em.execute<unknown[]>('select 1 from accounts where id = ? for key share', [accountId]);
  return rows.length === 1;
}

const threadIdsOf = (rows: { thread_id: string }[]) => rows.map((r) => r.thread_id);

/**
 * Upserts threads and messages in one statement, their metadata only: bodies are storeThread's, and
 * a stored message keeps its own. `insertOnly`: rows already stored are left exactly as they are.
 */
async function upsertMessages(
  em: EntityManager,
  accountId: string,
  rows: MessageMeta[],
  insertOnly = false,
): Promise<string[]> {
  const byId = new Map(rows.map((r) => [r.providerMessageId, r]));
  const payload = [...byId.values()].map((r) => ({
    pmid: r.providerMessageId,
    ptid: r.providerThreadId,
    from_name: r.fromName,
    from_address: r.fromAddress,
    subject: r.subject,
    snippet: r.snippet,
    sent_at: r.sentAt.toISOString(),
    labels: r.labelIds,
    bulk: r.bulk ?? false,
  }));
  const result = await executeBound<{ thread_id: string }>(
    em,
    `with r as (
       select * from jsonb_to_recordset(?::jsonb) as x(pmid text, ptid text, from_name text, from_address text, subject text,
         snippet text, sent_at timestamptz, labels text[], bulk boolean)
     ), t as (
       insert into mail_threads (account_id, provider_thread_id)
       select distinct ?::uuid, ptid from r
       on conflict (account_id, provider_thread_id) do update set updated_at = now()
       returning id, provider_thread_id
     )
     insert into mail_messages as m (account_id, thread_id, provider_message_id, from_name, from_address, subject, snippet, sent_at,
       is_unread, in_inbox, label_ids, is_bulk)
     select ?::uuid, t.id, r.pmid, r.from_name, r.from_address, r.subject, r.snippet, r.sent_at,
       'UNREAD' = any(r.labels), 'INBOX' = any(r.labels), r.labels, r.bulk
     from r join t on t.provider_thread_id = r.ptid
     on conflict (account_id, provider_message_id) do ${
       insertOnly
         ? 'nothing'
         : `update set
       from_name = excluded.from_name, from_address = excluded.from_address, subject = excluded.subject,
       snippet = excluded.snippet, sent_at = excluded.sent_at, is_unread = excluded.is_unread, in_inbox = excluded.in_inbox,
       label_ids = excluded.label_ids, is_bulk = excluded.is_bulk, updated_at = now()`
     }
     returning m.thread_id`,
    [JSON.stringify(payload), accountId, accountId],
  );
  return threadIdsOf(result);
}

async function updateLabels(
  em: EntityManager,
  accountId: string,
  changes: StoreChanges['labelChanges'],
): Promise<string[]> {
  const payload = changes.map((c) => ({ pmid: c.providerMessageId, labels: uniq(c.labelIds) }));
  const result = await executeBound<{ thread_id: string }>(
    em,
    `update mail_messages m set label_ids = x.labels, is_unread = 'UNREAD' = any(x.labels), in_inbox = 'INBOX' = any(x.labels), updated_at = now()
     from jsonb_to_recordset(?::jsonb) as x(pmid text, labels text[])
     where m.account_id = ? and m.provider_message_id = x.pmid
     returning m.thread_id`,
    [JSON.stringify(payload), accountId],
  );
  return threadIdsOf(result);
}

/** Recomputes the aggregates of the given threads and deletes those left without messages. */
export async function refreshThreads(em: EntityManager, threadIds: string[]): Promise<void> {
  const ids = uniq(threadIds);
  if (!ids.length) return;
  await em.execute(
    `with a as (
       select m.thread_id,
         (array_agg(m.subject order by m.sent_at, m.provider_message_id))[1] as subject,
         coalesce((array_agg(m.snippet order by m.sent_at desc, m.provider_message_id desc) filter (where m.in_inbox))[1],
                  (array_agg(m.snippet order by m.sent_at desc, m.provider_message_id desc))[1]) as snippet,
         coalesce(max(m.sent_at) filter (where m.in_inbox), max(m.sent_at)) as last_at,
         (array_agg(array[m.from_name, m.from_address] order by m.in_inbox desc, m.sent_at desc, m.provider_message_id desc))[1:1] as last_from,
         bool_or(m.is_unread) as unread, bool_or(m.in_inbox) as inbox,
         (array_agg(m.id order by m.sent_at desc, m.provider_message_id desc))[1] as latest
       from mail_messages m where m.thread_id = any(array[?]::uuid[]) group by m.thread_id
     ), u as (
       update mail_threads t set subject = coalesce(a.subject, ''), snippet = coalesce(a.snippet, ''), last_message_at = a.last_at,
         last_from_name = coalesce(a.last_from[1][1], ''), last_from_address = coalesce(a.last_from[1][2], ''),
         is_unread = a.unread, in_inbox = a.inbox, latest_message_id = a.latest, updated_at = now()
       from a where t.id = a.thread_id
       returning t.id
     )
     delete from mail_threads t where t.id = any(array[?]::uuid[]) and not exists (select 1 from mail_messages m where m.thread_id = t.id)`,
    [ids, ids],
    'run',
  );
}

/** Applies a batch; call inside the transaction that also moves the checkpoint. */
export async function applyChanges(em: EntityManager, accountId: string, c: StoreChanges): Promise<void> {
  const touched: string[] = [];
  touched.push(...(await recordListing(em, accountId, c)));
  if (c.upserts.length) touched.push(...(await upsertMessages(em, accountId, c.upserts)));
  if (c.labelChanges.length) touched.push(...(await updateLabels(em, accountId, c.labelChanges)));
  if (c.deletes.length) {
    const rows = await em.execute<{ thread_id: string }[]>(
      'delete from mail_messages where account_id = ? and provider_message_id = any(array[?]::text[]) returning thread_id',
      [accountId, uniq(c.deletes)],
    );
    touched.push(...threadIdsOf(rows));
  }
  await recordSetAside(em, accountId, c.setAside ?? [], [...(c.setAsideRecovered ?? []), ...(c.setAsideGone ?? [])]);
  await refreshThreads(em, touched);
}

/**
 * Stores the bodies of a thread just opened (the provider's full copy, fetched outside any
 * transaction, so possibly older than what a sync committed meanwhile). The sync owns the
 * rows: this only fills the bodies of stored messages — never their labels, read state or
 * metadata — and adds the thread's messages the sync does not keep (replies outside the
 * inbox), never an inbox message (the sync brings it, with its current state). Nothing is
 * deleted: a message missing from the copy is the sync's to remove. False: the account is gone.
 * A big thread comes in runs of about a megabyte of bodies, each in a transaction of its own
 * (body-chunks.ts): one statement's parameter holds one run, made of the bodies' bytes as the
 * parser packed them (packed-bodies.ts), never decoded here.
 */
export async function storeThread(
  em: EntityManager,
  accountId: string,
  threadId: string,
  rows: PackedMessage[],
): Promise<boolean> {
  if (!(await lockAccount(em, accountId))) return false;
  // Added first without their bodies: the statement below fills them with the rest.
  const outsideInbox = rows.filter((r) => !r.labelIds.includes('INBOX')).map(({ bodies: _, ...meta }) => meta);
  const touched = outsideInbox.length ? await upsertMessages(em, accountId, outsideInbox, true) : [];
  await executeBound(
    em,
    `update mail_messages m set body_text = x.b->>'bodyText', body_html = x.b->>'bodyHtml', attachments = x.b->'attachments',
       body_fetched_at = now(), body_sanitizer = ${SANITIZER_VERSION}
     from jsonb_to_recordset(?::text::jsonb) as x(pmid text, b jsonb)
     where m.account_id = ? and m.thread_id = ? and m.provider_message_id = x.pmid`,
    [bodiesParameter(rows), accountId, threadId],
  );
  // Bodies are in no aggregate: only messages added here change the thread's.
  if (touched.length) await refreshThreads(em, [threadId, ...touched]);
  return true;
}

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/**
 * `[{"pmid": …, "b": <the bodies' JSON>}, …]` as UTF-8 bytes, the bodies copied in as they are: a Buffer parameter
 * goes to PostgreSQL in binary format, which for text is the UTF-8 bytes themselves (hence `?::text::jsonb`). One
 * parameter per message instead (a VALUES list) saved this copy but made a window of big opens take 60-105 s
 * instead of 41-47 (bench/results/HISTORY.md).
 */
function bodiesParameter(rows: PackedMessage[]): Buffer {
  const parts: Uint8Array[] = [];
  for (const [i, r] of rows.entries())
    parts.push(utf8(`${i ? ',' : '['}{"pmid":${JSON.stringify(r.providerMessageId)},"b":`), r.bodies.json, utf8('}'));
  parts.push(utf8(rows.length ? ']' : '[]'));
  return Buffer.concat(parts);
}
