/**
 * A thread's bodies, fetched only when the thread is opened — one threads.get (format=full)
 * for the whole thread — stored through the mail store, and served from the store until a
 * message without a body joins the thread.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { GmailFactory } from '../../providers/gmail.ts';
import type { CredentialsService } from '../auth/credentials.service.ts';
import { AppError } from '../errors.ts';
import { storeThread } from './mail-store.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ThreadBodies {
  /** Fetches and stores the bodies of the thread's messages unless all are cached; NOT_FOUND for another account's thread. */
  ensure(em: EntityManager, accountId: string, threadId: string): Promise<void>;
}

export function createThreadBodies(deps: { gmail: GmailFactory; credentials: CredentialsService }): ThreadBodies {
  return {
    async ensure(em, accountId, threadId) {
      if (!UUID.test(threadId)) throw new AppError('NOT_FOUND');
      const rows = await em.execute<{ provider_thread_id: string; missing: number }[]>(
        `select t.provider_thread_id,
           (select count(*)::int from mail_messages m where m.thread_id = t.id and m.body_fetched_at is null) +
           (case when exists (select 1 from mail_messages m where m.thread_id = t.id) then 0 else 1 end) as missing
         from mail_threads t where t.id = ? and t.account_id = ?`,
        [threadId, accountId],
      );
      const thread = rows[0];
      if (!thread) throw new AppError('NOT_FOUND');
      if (thread.missing === 0) return;
      let messages;
      try {
        messages = await deps.gmail(await deps.credentials.client(em, accountId), accountId).getThreadFull(thread.provider_thread_id);
      } catch (err) {
        if (err instanceof AppError && err.code === 'TOKEN_EXPIRED' && err.cause) await deps.credentials.rethrowIfRevoked(accountId, err.cause);
        throw err;
      }
      if (!messages) throw new AppError('NOT_FOUND');
      const stored = messages.filter((m) => m.providerThreadId === thread.provider_thread_id);
      await em.transactional((tx) => storeThread(tx, accountId, threadId, stored));
    },
  };
}
