/**
 * The sync floor's writes, the same shape as the service's (server/domain/mail/mail-store.ts):
 * threads and messages upserted in one statement from one JSON parameter, the touched threads'
 * aggregates recomputed from their messages, the checkpoint moved. Copied, not imported, so
 * that a rewrite of the service's store does not silently change the floor.
 */

/** A messages.get format=metadata answer, as asked for (id, threadId, labelIds, snippet, internalDate, payload/headers). */
export interface WireMeta {
  id: string;
  threadId: string;
  labelIds?: string[];
  snippet?: string;
  internalDate?: string;
  payload?: { headers?: { name: string; value: string }[] };
}

const header = (m: WireMeta, name: string) =>
  m.payload?.headers?.find((h) => h.name.toLowerCase() === name)?.value ?? '';

/** The least normalisation a row needs: `Name <address>` split, the date from internalDate. */
export function toRow(m: WireMeta) {
  const from = header(m, 'from');
  const angle = /^\s*"?([^"<]*?)"?\s*<([^>]+)>/.exec(from);
  return {
    pmid: m.id,
    ptid: m.threadId,
    from_name: angle ? angle[1]! : '',
    from_address: angle ? angle[2]! : from.trim(),
    subject: header(m, 'subject'),
    snippet: m.snippet ?? '',
    sent_at: new Date(Number(m.internalDate ?? Date.now())).toISOString(),
    labels: m.labelIds ?? [],
  };
}

export const UPSERT_SQL = `/*floor*/ with r as (
    select * from jsonb_to_recordset($1::jsonb) as x(pmid text, ptid text, from_name text, from_address text, subject text,
      snippet text, sent_at timestamptz, labels text[])
  ), t as (
    insert into mail_threads (account_id, provider_thread_id)
    select distinct $2::uuid, ptid from r
    on conflict (account_id, provider_thread_id) do update set updated_at = now()
    returning id, provider_thread_id
  )
  insert into mail_messages as m (account_id, thread_id, provider_message_id, from_name, from_address, subject, snippet, sent_at,
    is_unread, in_inbox, label_ids)
  select $2::uuid, t.id, r.pmid, r.from_name, r.from_address, r.subject, r.snippet, r.sent_at,
    'UNREAD' = any(r.labels), 'INBOX' = any(r.labels), r.labels
  from r join t on t.provider_thread_id = r.ptid
  on conflict (account_id, provider_message_id) do update set
    from_name = excluded.from_name, from_address = excluded.from_address, subject = excluded.subject,
    snippet = excluded.snippet, sent_at = excluded.sent_at, is_unread = excluded.is_unread, in_inbox = excluded.in_inbox,
    label_ids = excluded.label_ids, updated_at = now()
  returning m.thread_id`;

export const REFRESH_SQL = `/*floor*/ with a as (
    select m.thread_id,
      (array_agg(m.subject order by m.sent_at, m.provider_message_id))[1] as subject,
      (array_agg(m.snippet order by m.sent_at desc, m.provider_message_id desc))[1] as snippet,
      max(m.sent_at) as last_at,
      (array_agg(array[m.from_name, m.from_address] order by m.sent_at desc, m.provider_message_id desc))[1:1] as last_from,
      bool_or(m.is_unread) as unread, bool_or(m.in_inbox) as inbox
    from mail_messages m where m.thread_id = any($1::uuid[]) group by m.thread_id
  )
  update mail_threads t set subject = coalesce(a.subject, ''), snippet = coalesce(a.snippet, ''), last_message_at = a.last_at,
    last_from_name = coalesce(a.last_from[1][1], ''), last_from_address = coalesce(a.last_from[1][2], ''),
    is_unread = a.unread, in_inbox = a.inbox, updated_at = now()
  from a where t.id = a.thread_id`;

export const CHECKPOINT_SQL = `/*floor*/ update sync_states set history_id = $2, last_synced_at = now(), updated_at = now() where account_id = $1`;
