/**
 * The thread an AI route works on: the account's thread and its latest synced message
 * (NOT_FOUND when either is missing), and the messages with their bodies once fetched.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { Account, MailMessage, MailThread } from '../../../db/entities/index.ts';
import { AppError } from '../errors.ts';
import type { BodyPurpose } from '../mail/threads/thread-bodies.service.ts';

export type EnsureBodies = (
  em: EntityManager,
  accountId: string,
  threadId: string,
  purpose?: BodyPurpose,
) => Promise<void>;

// The thread detail's order (sent_at, provider_message_id), reversed.
const NEWEST_FIRST = { sentAt: 'desc', providerMessageId: 'desc' } as const;

export async function findLatest(
  em: EntityManager,
  accountId: string,
  threadId: string,
): Promise<{ thread: MailThread; latest: MailMessage }> {
  const thread = await em.findOne(MailThread, { id: threadId, account: accountId });
  if (!thread) throw new AppError('NOT_FOUND');
  const latest = await em.findOne(MailMessage, { thread: threadId, account: accountId }, { orderBy: NEWEST_FIRST });
  if (!latest) throw new AppError('NOT_FOUND');
  return { thread, latest };
}

/**
 * Fetches missing bodies through the mail feature, then reads the newest `count`
 * messages again from the database (oldest first), bodies included.
 */
export async function loadWithBodies(
  em: EntityManager,
  ensureBodies: EnsureBodies,
  accountId: string,
  threadId: string,
  count: number,
  purpose: BodyPurpose = 'open',
): Promise<{ account: Account; messages: MailMessage[] }> {
  await ensureBodies(em, accountId, threadId, purpose);
  const account = await em.findOne(Account, { id: accountId });
  if (!account) throw new AppError('AUTH_REQUIRED');
  const newest = await em.find(
    MailMessage,
    { thread: threadId, account: accountId },
    { orderBy: NEWEST_FIRST, limit: count, refresh: true },
  );
  if (!newest.length) throw new AppError('NOT_FOUND');
  return { account, messages: newest.reverse() };
}
