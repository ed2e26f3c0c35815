/**
 * The mail provider (runtime-contract part 3 "Mail") behind a small interface, implemented
 * with the official `@googleapis/gmail` client. Every request has a timeout and no client
 * retry: a sync is idempotent and resumable, so a failed request fails the sync promptly
 * (quota errors must reach the caller as MAIL_RATE_LIMITED, not be retried for seconds).
 * The bearer token is attached here rather than by the OAuth2Client, which would refresh
 * and retry on every 403 too (a quota 403 then costs a token refresh and a second call);
 * here the token is refreshed when expired and once after a 401, shared by parallel calls.
 * Answers are shape-checked here; a garbled body is a provider failure, never a crash.
 */
import { gmail as gmailClient } from '@googleapis/gmail';
import type { OAuth2Client } from 'google-auth-library';
import { z } from 'zod';
import type { QuotaMethod, QuotaPacer, QuotaPurpose } from './gmail-quota.ts';
import { readMetadata } from './gmail-metadata.ts';
import { AppError } from '../domain/errors.ts';
import { classifyGmailError, okStream, statusOf } from './gmail-errors.ts';
import {
  historySchema,
  labelCountsSchema,
  listSchema,
  messageSchema,
  parse,
  profileSchema,
  stream,
  threadMetaSchema,
  watchSchema,
  type GmailMessage,
  type HistoryRecord,
} from './gmail-wire.ts';
import { createBodyParser, type BodyParser } from './mail/body-parser.ts';
import { META_HEADERS, toMessageMeta, type MessageMeta } from './mail/message-meta.ts';
import type { PackedMessage, ThreadMessage as MailMessage } from './mail/thread-answer.ts';

export const GMAIL_TIMEOUT_MS = 10_000;
/**
 * Parallel messages.get per sync. A 50-message batch takes two waves of provider latency
 * (a listing call: profile, messages.list, two waves = 4 round trips; history: 3) instead
 * of five at 10. Kept at half a batch: Gmail answers bursts of concurrent requests of one
 * user with 429 "Too many concurrent requests"; the units are the pacer's (gmail-quota.ts).
 */
export const GET_CONCURRENCY = 25;
const HISTORY_PAGE = 500;
const META_FIELDS = 'id,threadId,labelIds,snippet,internalDate,payload/headers';
const HISTORY_MAX_PAGES = 10;

export type { GmailMessage, HistoryRecord, WirePart } from './gmail-wire.ts';
export { classifyGmailError } from './gmail-errors.ts';
export type { MessageBodies } from './mail/message-body.ts';
/**
 * MailMessage: a message of an opened thread, normalised: metadata and bodies. PackedMessage: the same as
 * getThreadFull hands it on, its bodies as the store's bytes (mail/packed-bodies.ts).
 */
export type { MessageMeta, MailMessage, PackedMessage };
export interface MessageRef {
  id: string;
  threadId: string;
}
/** The quota ran out part-way through a getMetadata: the error to answer, and the ids left unfetched. */
export interface MetadataQuota {
  error: AppError;
  unfetched: string[];
}
export interface HistoryPage {
  records: HistoryRecord[];
  /** The mailbox's current history id (valid as a checkpoint only when `complete`). */
  historyId: string;
  /** False when more records exist than were fetched (page cap reached). */
  complete: boolean;
}

export interface GmailApi {
  /** A page of the inbox's ids (`labelIds`: every one of them, default INBOX), newest first. A page token the provider refuses (400) restarts the listing from the top. */
  listInbox(p: {
    pageToken?: string;
    maxResults: number;
    labelIds?: string[];
    q?: string;
  }): Promise<{ messages: MessageRef[]; nextPageToken?: string }>;
  /**
   * format=metadata for each id (at most GET_CONCURRENCY at a time), normalised
   * (mail/message-meta.ts). Messages gone (404) are left out; a message the provider
   * answers for with an error of its own (5xx, a malformed answer, a dropped connection) or
   * that cannot be normalised is listed in `failed` while the others come back; authorization
   * failures fail the whole call. When the quota runs out part-way, what was fetched comes back
   * with `quota` (the error, and the ids not fetched: neither gone nor failed); when it runs out
   * before anything was fetched, the call fails (MAIL_RATE_LIMITED). `threadOf` (id -> thread id,
   * when known) lets messages of one thread come from one threads.get where that costs less (gmail-metadata.ts).
   */
  getMetadata(
    ids: string[],
    threadOf?: ReadonlyMap<string, string>,
  ): Promise<{ messages: MessageMeta[]; failed: { id: string; reason: string }[]; quota?: MetadataQuota }>;
  /** Every history record after the checkpoint; 'expired' when the provider no longer honours it (404). */
  listHistory(startHistoryId: string): Promise<HistoryPage | 'expired'>;
  /**
   * format=full: each message of the thread, normalised with its bodies (packed), handed to `each` as soon as
   * it is parsed (a place can come again, the later standing: BodyParser.parseThreadInto); the count,
   * null when the thread is gone or empty. The answer is streamed to `bodies` (mail/body-parser.ts:
   * a big one parsed on a worker thread), never decoded or parsed whole on the event loop.
   */
  getThreadFull(threadId: string, each: (message: PackedMessage, index: number) => void): Promise<number | null>;
  profile(): Promise<{ emailAddress: string; historyId: string }>;
  /**
   * How many messages the inbox holds, by the provider's own count (`labels/INBOX`,
   * `messagesTotal`; one quota unit): a backfill's estimated total. Null when the provider
   * gives no count; fails like any call. Optional: wrappers and fakes that predate it may leave it out.
   */
  inboxCount?(): Promise<number | null>;
  watch(p: { topicName: string; labelIds: string[] }): Promise<{ historyId: string; expiration: Date }>;
  stop(): Promise<void>;
  /** Requests sent through this instance (for logs and measurements). */
  readonly requests: number;
}
/** Whose quota a client's calls are charged to, and why they are made (their lane: gmail-quota.ts); read at each call, so its holder may move `purpose` between phases. */
export interface QuotaUse {
  accountId: string;
  purpose: QuotaPurpose;
}
/** A client for one account's grant; `quota` charges and paces its calls within the provider's per-user quota. */
export type GmailFactory = (auth: OAuth2Client, quota?: QuotaUse) => GmailApi;

/**
 * `bodies`: where opened threads' answers are parsed (the container's moves big ones off the event loop; by default all inline).
 * `pacer`: charges each call to its account's quota (none: calls go unpaced and uncounted, as in unit tests).
 */
export function createGmailFactory(opts: {
  rootUrl: string;
  bodies?: Pick<BodyParser, 'parseThreadInto'>;
  timeoutMs?: number;
  pacer?: QuotaPacer;
}): GmailFactory {
  const timeout = opts.timeoutMs ?? GMAIL_TIMEOUT_MS;
  const users = gmailClient({ version: 'v1', rootUrl: opts.rootUrl }).users;
  const pacer = opts.pacer;
  const bodies = opts.bodies ?? createBodyParser({ inlineBytes: Infinity });
  return (auth, quota) => {
    let requests = 0;
    let token: Promise<string> | null = null;
    /** The current access token; `stale` (the one a 401 refused) forces one shared refresh. */
    const bearer = (stale?: Promise<string>): Promise<string> => {
      if (!token || (stale && token === stale)) {
        if (stale) auth.setCredentials({ ...auth.credentials, access_token: null, expiry_date: null });
        const next = auth.getAccessToken().then((r) => {
          if (!r.token) throw new Error('no access token');
          return r.token;
        });
        token = next;
        next.catch(() => token === next && (token = null));
      }
      return token;
    };
    type Send = (o: { timeout: number; retry: false; headers: Record<string, string> }) => Promise<{ data: unknown }>;
    /** `expect`: units the caller spends right after this call (one grant for both). */
    const call = async <T>(send: Send, schema: z.ZodType<T>, what: QuotaMethod, expect?: number): Promise<T> => {
      let used: Promise<string> | undefined;
      for (let attempt = 0; ; attempt++) {
        if (pacer && quota) await pacer.take(quota.accountId, quota.purpose, what, expect); // our own wait: MAIL_RATE_LIMITED already
        requests++;
        try {
          used ??= bearer();
          const { data } = await send({ timeout, retry: false, headers: { Authorization: `Bearer ${await used}` } });
          return parse(schema, data, what);
        } catch (err) {
          if (attempt === 0 && statusOf(err) === 401) {
            used = bearer(used);
            continue;
          }
          throw classifyGmailError(err);
        }
      }
    };
    const orNullOn404 = async <T>(p: Promise<T>): Promise<T | null> => {
      try {
        return await p;
      } catch (err) {
        if (err instanceof AppError && statusOf(err.cause) === 404) return null;
        throw err;
      }
    };

    return {
      get requests() {
        return requests;
      },
      async listInbox({ pageToken, maxResults, labelIds = ['INBOX'], q }) {
        const list = (token?: string) =>
          call(
            (o) =>
              users.messages.list(
                {
                  userId: 'me',
                  labelIds,
                  q,
                  maxResults,
                  pageToken: token,
                  fields: 'messages(id,threadId),nextPageToken',
                },
                o,
              ),
            listSchema,
            'messages.list',
          );
        try {
          return await list(pageToken);
        } catch (err) {
          // Re-listing is safe: stored rows are upserted by provider id, and the resync sweep keys on time.
          if (pageToken && err instanceof AppError && statusOf(err.cause) === 400) return list(undefined);
          throw err;
        }
      },

      async getMetadata(ids, threadOf) {
        const headers = { format: 'metadata', metadataHeaders: META_HEADERS };
        const { got, failed, refused } = await readMetadata(
          {
            one: (id, expect) =>
              orNullOn404(
                call(
                  (o) => users.messages.get({ userId: 'me', id, ...headers, fields: META_FIELDS }, o),
                  messageSchema,
                  'messages.get',
                  expect,
                ),
              ),
            thread: async (id, expect) =>
              (
                await orNullOn404(
                  call(
                    (o) => users.threads.get({ userId: 'me', id, ...headers, fields: `messages(${META_FIELDS})` }, o),
                    threadMetaSchema,
                    'threads.get',
                    expect,
                  ),
                )
              )?.messages ?? null,
            cost: pacer ? (m) => pacer.cost(m) : undefined,
            concurrency: GET_CONCURRENCY,
          },
          ids,
          threadOf,
        );
        const messages: MessageMeta[] = [];
        const unfetched = ids.filter((_, i) => got[i] === undefined);
        // Nothing fetched before the quota ran out: the call fails as a whole (MAIL_RATE_LIMITED).
        if (refused && unfetched.length === ids.length) throw refused;
        for (const m of got) {
          if (!m) continue;
          try {
            messages.push(toMessageMeta(m));
          } catch {
            failed.push({ id: m.id, reason: 'UNPARSABLE' });
          }
        }
        return refused ? { messages, failed, quota: { error: refused, unfetched } } : { messages, failed };
      },

      async listHistory(startHistoryId) {
        const records: HistoryRecord[] = [];
        let pageToken: string | undefined;
        // A notified sync reads a page and, most often, fetches one message: one grant for both.
        const expect = pacer ? pacer.cost('history.list') + pacer.cost('messages.get') : 0;
        for (let page = 0; ; page++) {
          const list = (o: object) =>
            users.history.list({ userId: 'me', startHistoryId, pageToken, maxResults: HISTORY_PAGE }, o);
          const res = await orNullOn404(call(list, historySchema, 'history.list', expect));
          if (!res) return 'expired';
          records.push(...res.history);
          pageToken = res.nextPageToken;
          if (!pageToken || page + 1 >= HISTORY_MAX_PAGES)
            return { records, historyId: res.historyId, complete: !pageToken };
        }
      },

      async getThreadFull(threadId, each) {
        const send = (o: object) =>
          users.threads
            .get(
              { userId: 'me', id: threadId, format: 'full' },
              { ...o, responseType: 'stream', validateStatus: () => true },
            )
            .then(okStream);
        const body = await orNullOn404(call(send, stream, 'threads.get'));
        // A connection dropped or timed out while the body streams in is the provider's failure.
        const count =
          body &&
          (await bodies.parseThreadInto(body, each).catch((err: unknown) => Promise.reject(classifyGmailError(err))));
        if (count === 'malformed')
          throw new AppError('SYNC_FAILED', {
            cause: new Error('malformed threads.get answer from the mail provider'),
          });
        return count || null;
      },

      profile: () => call((o) => users.getProfile({ userId: 'me' }, o), profileSchema, 'profile'),
      async inboxCount() {
        const label = await call(
          (o) => users.labels.get({ userId: 'me', id: 'INBOX', fields: 'messagesTotal' }, o),
          labelCountsSchema,
          'labels.get',
        );
        return label.messagesTotal ?? null;
      },

      async watch({ topicName, labelIds }) {
        const w = await call(
          (o) => users.watch({ userId: 'me', requestBody: { topicName, labelIds, labelFilterBehavior: 'include' } }, o),
          watchSchema,
          'watch',
        );
        return { historyId: w.historyId, expiration: new Date(Number(w.expiration)) };
      },

      async stop() {
        await call((o) => users.stop({ userId: 'me' }, o), z.unknown(), 'stop');
      },
    };
  };
}
