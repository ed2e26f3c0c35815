/**
 * Reading the synced mail: the inbox thread list (thread-list.ts), a thread's detail
 * (thread-detail.ts), whose bodies thread-bodies.service.ts fetches and stores on first open,
 * and one message's bodies. Nothing here writes.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AttachmentMeta } from '../../../../db/entities/index.ts';
import type { MessageBody, ThreadDetail, ThreadList } from '../../../../shared/schemas/mail.ts';
import { createBodyCache, type BodyCache } from './body-cache.ts';
import { createOpenGate, type OpenGate, type OpenGateOptions } from './open-gate.ts';
import { attachmentList, threadDetail } from './thread-detail.ts';
import { AppError } from '../../errors.ts';
import type { RunPrepared } from '../../prepared-sql.ts';
import { listThreads, type ListPage } from './thread-list.ts';
import type { ThreadBodies } from './thread-bodies.service.ts';

export { LIST_THREADS, listThreads, listThreadsParams, toThreadList, type ThreadListRow } from './thread-list.ts';

/**
 * One message's bodies (fetched with its thread's on first open); NOT_FOUND unless the message
 * is in the account's thread. Read in the account's place at the open gate, and paced with its
 * thread answers.
 */
export async function messageBody(
  em: EntityManager,
  deps: { bodies: ThreadBodies; gate: OpenGate },
  accountId: string,
  threadId: string,
  messageId: string,
): Promise<MessageBody> {
  await deps.bodies.ensure(em, accountId, threadId);
  return deps.gate.run(accountId, async (served) => {
    const [m] = await em.execute<
      { id: string; body_text: string | null; body_html: string | null; attachments: AttachmentMeta[] | null }[]
    >(
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
  list(accountId: string, page: ListPage): Promise<ThreadList>;
  detail(em: EntityManager, accountId: string, threadId: string): Promise<ThreadDetail>;
  messageBody(em: EntityManager, accountId: string, threadId: string, messageId: string): Promise<MessageBody>;
}

/**
 * The mail routes' reads: the list on the prepared statement, the detail with bodies fetched on
 * first open (at most `bodyBudget` of them) and served from `cache` (one of the default bound
 * unless given) while they stay as stored; detail and message bodies through one open gate.
 */
export function createThreadReads(deps: {
  prepared: RunPrepared;
  bodies: ThreadBodies;
  bodyBudget?: number;
  cache?: BodyCache;
  gate?: OpenGateOptions;
}): ThreadReads {
  const reads = {
    prepared: deps.prepared,
    bodies: deps.bodies,
    cache: deps.cache ?? createBodyCache(),
    gate: createOpenGate(deps.gate),
  };
  return {
    list: (accountId, page) => listThreads(deps.prepared, accountId, page),
    detail: (em, accountId, threadId) => threadDetail(em, reads, accountId, threadId, deps.bodyBudget),
    messageBody: (em, accountId, threadId, messageId) => messageBody(em, reads, accountId, threadId, messageId),
  };
}
