/**
 * Reading the synced mail: the inbox thread list (newest first, one query through the
 * partial list index; the total from the per-account counter), a thread's detail
 * (thread-detail.ts), whose bodies thread-bodies.service.ts fetches and stores on first open,
 * and one message's bodies. Nothing here writes.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AttachmentMeta } from '../../../db/entities/index.ts';
import type { MessageBody, ThreadDetail, ThreadList } from '../../../shared/schemas/mail.ts';
import { createBodyCache, type BodyCache } from './body-cache.ts';
import { createOpenGate, type OpenGate, type OpenGateOptions } from './open-gate.ts';
import { attachmentList, threadDetail } from './thread-detail.ts';
import { AppError } from '../errors.ts';
import { preparedStatement, type RunPrepared } from '../prepared-sql.ts';
import type { ThreadBodies } from './thread-bodies.service.ts';

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
 * One message's bodies (fetched with its thread's on first open); NOT_FOUND unless the message
 * is in the account's thread. Read in the account's place at the open gate, and paced with its
 * thread answers.
 */
export async function messageBody(em: EntityManager, deps: { bodies: ThreadBodies; gate: OpenGate }, accountId: string, threadId: string, messageId: string): Promise<MessageBody> {
  await deps.bodies.ensure(em, accountId, threadId);
  return deps.gate.run(accountId, async (served) => {
    const [m] = await em.execute<{ id: string; body_text: string | null; body_html: string | null; attachments: AttachmentMeta[] | null }[]>(
      'select id, body_text, body_html, attachments from mail_messages where id = ? and thread_id = ? and account_id = ?',
      [messageId, threadId, accountId],
    );
    if (!m) throw new AppError('NOT_FOUND');
    const bodyText = m.body_text ?? '';
    const bodyHtml = m.body_html ?? '';
    served(Buffer.byteLength(bodyText) + Buffer.byteLength(bodyHtml));
    return { id: m.id, threadId, bodyText, bodyHtml, attachments: attachmentList(m.attachments) };
  });
}

export interface ThreadReads {
  list(accountId: string, page: { limit: number; offset: number }): Promise<ThreadList>;
  detail(em: EntityManager, accountId: string, threadId: string): Promise<ThreadDetail>;
  messageBody(em: EntityManager, accountId: string, threadId: string, messageId: string): Promise<MessageBody>;
}

/**
 * The mail routes' reads: the list on the prepared statement, the detail with bodies fetched on
 * first open (at most `bodyBudget` of them) and served from `cache` (one of the default bound
 * unless given) while they stay as stored; detail and message bodies through one open gate.
 */
export function createThreadReads(deps: { prepared: RunPrepared; bodies: ThreadBodies; bodyBudget?: number; cache?: BodyCache; gate?: OpenGateOptions }): ThreadReads {
  const reads = { prepared: deps.prepared, bodies: deps.bodies, cache: deps.cache ?? createBodyCache(), gate: createOpenGate(deps.gate) };
  return {
    list: (accountId, page) => listThreads(deps.prepared, accountId, page),
    detail: (em, accountId, threadId) => threadDetail(em, reads, accountId, threadId, deps.bodyBudget),
    messageBody: (em, accountId, threadId, messageId) => messageBody(em, reads, accountId, threadId, messageId),
  };
}
