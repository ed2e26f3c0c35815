/**
 * Reading the synced mail: the inbox thread list (newest first, one query through the
 * partial list index; the total from the per-account counter) and a thread's detail, whose
 * bodies thread-bodies.service.ts fetches and stores on first open. Nothing here writes.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AttachmentMeta } from '../../../db/entities/index.ts';
import type { MessageBody, ThreadDetail, ThreadList } from '../../../shared/schemas/mail.ts';
import { AppError } from '../errors.ts';
import { preparedStatement, type RunPrepared } from '../prepared-sql.ts';
import type { ThreadBodies } from './thread-bodies.service.ts';
import { toIso } from '../time.ts';

/**
 * The inbox total (kept per account by triggers on mail_threads, see mail_inbox_counts) and
 * the page, newest first through the partial list index, in one statement and so one
 * snapshot (parameters: account, account, limit, offset). The time comes formatted as the
 * API writes it (what Date#toISOString gives; both truncate to milliseconds), which spares
 * parsing and formatting a date per row. Exported so that the benchmark's bare handler
 * serves exactly the same SQL.
 */
export const LIST_THREADS = preparedStatement('mia_list_threads', `select c.total, t.* from (select coalesce((select total from mail_inbox_counts where account_id = ?), 0) as total) c
     left join lateral (
       select id, provider_thread_id, subject, snippet, is_unread, last_from_name, last_from_address,
         to_char(coalesce(last_message_at, created_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last_at
       from mail_threads
       where account_id = ? and in_inbox order by last_message_at desc, id desc limit ? offset ?
     ) t on true`);

export const listThreadsParams = (accountId: string, page: { limit: number; offset: number }): unknown[] => [accountId, accountId, page.limit, page.offset];

export interface ThreadListRow {
  total: number;
  id: string | null;
  provider_thread_id: string;
  subject: string;
  snippet: string;
  is_unread: boolean;
  last_from_name: string;
  last_from_address: string;
  last_at: string;
}

export function toThreadList(rows: ThreadListRow[], page: { limit: number; offset: number }): ThreadList {
  const total = rows[0]?.total ?? 0;
  const threads = [];
  for (const r of rows) {
    if (r.id === null) continue;
    threads.push({
      id: r.id, mailThreadId: r.provider_thread_id, subject: r.subject, snippet: r.snippet,
      fromName: r.last_from_name, fromAddress: r.last_from_address, lastMessageAt: r.last_at, isUnread: r.is_unread,
    });
  }
  return { threads, total, hasMore: page.offset + threads.length < total };
}

/** One statement, read-only, no entities: a prepared statement, no EntityManager needed. */
export async function listThreads(run: RunPrepared, accountId: string, page: { limit: number; offset: number }): Promise<ThreadList> {
  return toThreadList(await run<ThreadListRow>(LIST_THREADS, listThreadsParams(accountId, page)), page);
}

/**
 * The bodies one thread answer carries at most (UTF-16 code units, text and HTML together),
 * newest message first. Every body read, held and serialised is event-loop work and memory that
 * grows with it: a hundred messages at MAIL_LIMITS.body twice is 50 M characters in one answer.
 * 2 M holds dozens of ordinary messages (a few KB each); past it the older ones are left out,
 * in PostgreSQL, and fetched one by one (messageBody). The newest message is always whole.
 */
export const THREAD_BODY_BUDGET = 2 * 1024 * 1024;

export async function threadDetail(em: EntityManager, bodies: ThreadBodies, accountId: string, threadId: string, budget = THREAD_BODY_BUDGET): Promise<ThreadDetail> {
  await bodies.ensure(em, accountId, threadId);
  const [thread] = await em.execute<{ id: string; provider_thread_id: string; subject: string; is_unread: boolean }[]>(
    'select id, provider_thread_id, subject, is_unread from mail_threads where id = ? and account_id = ?',
    [threadId, accountId],
  );
  if (!thread) throw new AppError('NOT_FOUND');
  const messages = await em.execute<
    { id: string; from_name: string; from_address: string; subject: string; snippet: string; sent_at: Date; is_unread: boolean; body_text: string | null; body_html: string | null; attachments: AttachmentMeta[] | null; kept: boolean }[]
  >(
    `select id, from_name, from_address, subject, snippet, sent_at, is_unread, attachments, kept,
       case when kept then body_text end as body_text, case when kept then body_html end as body_html
     from (
       select id, provider_message_id, from_name, from_address, subject, snippet, sent_at, is_unread, attachments, body_text, body_html,
         row_number() over newest = 1 or sum(coalesce(length(body_text), 0) + coalesce(length(body_html), 0)) over newest <= ? as kept
       from mail_messages where thread_id = ? and account_id = ?
       window newest as (order by sent_at desc, provider_message_id desc rows between unbounded preceding and current row)
     ) m order by sent_at, provider_message_id`,
    [budget, threadId, accountId],
  );
  return {
    id: thread.id,
    mailThreadId: thread.provider_thread_id,
    subject: thread.subject,
    isUnread: thread.is_unread,
    messages: messages.map((m) => ({
      id: m.id,
      threadId: thread.id,
      fromName: m.from_name,
      fromAddress: m.from_address,
      subject: m.subject,
      snippet: m.snippet,
      sentAt: toIso(m.sent_at),
      isUnread: m.is_unread,
      bodyText: m.body_text ?? '',
      bodyHtml: m.body_html ?? '',
      attachments: (m.attachments ?? []).map((a) => ({ filename: a.filename, mimeType: a.mimeType, size: a.size })),
      bodyOmitted: !m.kept,
    })),
  };
}

/** One message's bodies (fetched with its thread's on first open); NOT_FOUND unless the message is in the account's thread. */
export async function messageBody(em: EntityManager, bodies: ThreadBodies, accountId: string, threadId: string, messageId: string): Promise<MessageBody> {
  await bodies.ensure(em, accountId, threadId);
  const [m] = await em.execute<{ id: string; body_text: string | null; body_html: string | null; attachments: AttachmentMeta[] | null }[]>(
    'select id, body_text, body_html, attachments from mail_messages where id = ? and thread_id = ? and account_id = ?',
    [messageId, threadId, accountId],
  );
  if (!m) throw new AppError('NOT_FOUND');
  const attachments = (m.attachments ?? []).map((a) => ({ filename: a.filename, mimeType: a.mimeType, size: a.size }));
  return { id: m.id, threadId, bodyText: m.body_text ?? '', bodyHtml: m.body_html ?? '', attachments };
}

export interface ThreadReads {
  list(accountId: string, page: { limit: number; offset: number }): Promise<ThreadList>;
  detail(em: EntityManager, accountId: string, threadId: string): Promise<ThreadDetail>;
  messageBody(em: EntityManager, accountId: string, threadId: string, messageId: string): Promise<MessageBody>;
}

/** The mail routes' reads: the list on the prepared statement, the detail with bodies fetched on first open (at most `bodyBudget` of them). */
export function createThreadReads(deps: { prepared: RunPrepared; bodies: ThreadBodies; bodyBudget?: number }): ThreadReads {
  return {
    list: (accountId, page) => listThreads(deps.prepared, accountId, page),
    detail: (em, accountId, threadId) => threadDetail(em, deps.bodies, accountId, threadId, deps.bodyBudget),
    messageBody: (em, accountId, threadId, messageId) => messageBody(em, deps.bodies, accountId, threadId, messageId),
  };
}
