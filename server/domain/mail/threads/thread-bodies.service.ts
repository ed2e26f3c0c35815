/**
 * A thread's bodies, fetched only when the thread is opened — one threads.get (format=full)
 * for the whole thread — stored through the mail store, and served from the store until a
 * message without a body joins the thread, or a body was sanitised by an older sanitiser.
 *
 * One open must not cost every other user: concurrent opens of one thread (a user's tabs, the
 * AI routes, ten clients of one account) share one check, fetch, parse and store, and an answer
 * the service will not or could not parse (over the cap, or failing on the body worker) is
 * remembered for `failureTtlMs`, so reopening that thread answers at once instead of fetching and
 * parsing megabytes again. Cheap failures (the provider's 5xx, 429, a dropped connection) are
 * not remembered: the next open tries again, as the user expects. A refusal (the account's places
 * or the parse queue full: SERVICE_UNAVAILABLE) is remembered for its Retry-After (at most
 * `refusalTtlMs`): a client retrying sooner is told the rest of the wait at once. And one account cannot hold
 * the process's memory with answers of many threads at once (each up to 32 MiB): at most
 * `fetchesPerAccount` of its threads are fetched at a time, whichever route asked (the thread
 * detail, a message body, the AI routes), a few more wait, the rest are refused at once.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { GmailFactory, PackedMessage } from '../../../providers/gmail.ts';
import { SANITIZER_VERSION } from '../../../providers/mail/message-body.ts';
import { UnusableAnswerError } from '../../../providers/mail/thread-answer.ts';
import type { CredentialsService } from '../../auth/credentials.service.ts';
import { AppError } from '../../errors.ts';
import { createAccountPlaces } from './account-places.ts';
import { bodyRuns } from './body-chunks.ts';
import { storeThread } from '../mail-store.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Threads whose failure is remembered at most; past it the oldest is forgotten first. */
const MAX_REMEMBERED = 1_000;

export interface ThreadBodies {
  /** Fetches and stores the bodies of the thread's messages unless all are cached; NOT_FOUND for another account's thread. */
  ensure(em: EntityManager, accountId: string, threadId: string, purpose?: BodyPurpose): Promise<void>;
}

/** Who reads the bodies: a user's open (the default) or analysis on arrival (its provider calls are background work). */
export type BodyPurpose = 'open' | 'triage';

export interface ThreadBodiesOptions {
  /** How long a thread whose answer could not be used answers its opens with that failure (default 30 s). */
  failureTtlMs?: number;
  /** Provider fetches of one account's threads in flight at once (default 2); the others wait their turn. */
  fetchesPerAccount?: number;
  /** Fetches of one account waiting at most (default 8); one more is SERVICE_UNAVAILABLE with Retry-After. */
  fetchesWaiting?: number;
  /** How long at most a refused open (SERVICE_UNAVAILABLE) answers its thread's reopens with the rest of its wait (default 5 s). */
  refusalTtlMs?: number;
  /** Milliseconds now (tests pass a clock they move). */
  now?: () => number;
}

export function createThreadBodies(
  deps: { gmail: GmailFactory; credentials: CredentialsService } & ThreadBodiesOptions,
): ThreadBodies {
  const failureTtlMs = deps.failureTtlMs ?? 30_000;
  const refusalTtlMs = deps.refusalTtlMs ?? 5_000;
  const now = deps.now ?? Date.now;
  const flights = new Map<string, Promise<void>>();
  const slots = createAccountPlaces({
    perAccount: deps.fetchesPerAccount ?? 2,
    maxWaiting: deps.fetchesWaiting ?? 8,
    retryAfterSeconds: 2,
    describe: 'thread fetches',
  });
  const failures = new Map<string, { error: unknown; until: number }>();

  async function fetchAndStore(
    em: EntityManager,
    accountId: string,
    threadId: string,
    purpose: BodyPurpose,
  ): Promise<void> {
    const rows = await em.execute<{ provider_thread_id: string; missing: number }[]>(
      `select t.provider_thread_id,
         (select count(*)::int from mail_messages m where m.thread_id = t.id
           and (m.body_fetched_at is null or m.body_sanitizer < ${SANITIZER_VERSION})) +
         (case when exists (select 1 from mail_messages m where m.thread_id = t.id) then 0 else 1 end) as missing
       from mail_threads t where t.id = ? and t.account_id = ?`,
      [threadId, accountId],
    );
    const thread = rows[0];
    if (!thread) throw new AppError('NOT_FOUND');
    if (thread.missing === 0) return;
    // Only a provider fetch takes one of the account's places: a stored thread opens at once.
    await slots.run(accountId, () => fetchFull(em, accountId, threadId, thread.provider_thread_id, purpose));
  }

  async function fetchFull(
    em: EntityManager,
    accountId: string,
    threadId: string,
    providerThreadId: string,
    purpose: BodyPurpose,
  ): Promise<void> {
    // Stored as the parser makes them, about a megabyte of bodies at a time: neither thread holds the whole thread's bodies.
    const runs = bodyRuns<PackedMessage>(
      async (rows) => {
        if (!(await em.transactional((tx) => storeThread(tx, accountId, threadId, rows))))
          throw new AppError('NOT_FOUND');
      },
      (row) => row.bodies.json.byteLength,
    );
    let count;
    try {
      const api = deps.gmail(await deps.credentials.client(em, accountId), { accountId, purpose });
      count = await api.getThreadFull(providerThreadId, (m) => m.providerThreadId === providerThreadId && runs.add(m));
    } catch (err) {
      await runs.end().catch(() => {}); // what was parsed before the failure is stored (each message was whole): the provider's error is the answer
      if (err instanceof AppError && err.code === 'TOKEN_EXPIRED' && err.cause)
        await deps.credentials.rethrowIfRevoked(accountId, err.cause);
      throw err;
    }
    await runs.end();
    if (!count) throw new AppError('NOT_FOUND');
  }

  function remember(key: string, error: unknown): void {
    const refused = error instanceof AppError && error.code === 'SERVICE_UNAVAILABLE' && error.retryAfter !== undefined;
    const ttl = refused
      ? Math.min(refusalTtlMs, error.retryAfter! * 1000)
      : error instanceof AppError && error.cause instanceof UnusableAnswerError
        ? failureTtlMs
        : 0;
    if (ttl <= 0) return;
    failures.delete(key);
    if (failures.size >= MAX_REMEMBERED) failures.delete(failures.keys().next().value!);
    failures.set(key, { error, until: now() + ttl });
  }

  /** A remembered failure as the next open hears it: a refusal with the rest of its wait. */
  function replay(failed: { error: unknown; until: number }): unknown {
    const { error } = failed;
    if (!(error instanceof AppError) || error.code !== 'SERVICE_UNAVAILABLE') return error;
    return new AppError('SERVICE_UNAVAILABLE', {
      retryAfter: Math.max(1, Math.ceil((failed.until - now()) / 1000)),
      cause: error.cause,
    });
  }

  return {
    ensure(em, accountId, threadId, purpose = 'open') {
      if (!UUID.test(threadId)) return Promise.reject(new AppError('NOT_FOUND'));
      const key = `${accountId}:${threadId}`;
      const failed = failures.get(key);
      if (failed && failed.until > now()) return Promise.reject(replay(failed));
      if (failed) failures.delete(key);
      let flight = flights.get(key);
      if (!flight) {
        // Set before anything is awaited: opens arriving while this one runs join it.
        flight = fetchAndStore(em, accountId, threadId, purpose)
          .catch((err: unknown) => {
            remember(key, err);
            throw err;
          })
          .finally(() => flights.delete(key));
        flights.set(key, flight);
      }
      return flight;
    },
  };
}
