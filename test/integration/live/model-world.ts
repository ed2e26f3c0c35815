/**
 * What the live-inbox model tests share (live-model.test.ts, live-quiet-night.test.ts): an
 * account signed in as sign-in leaves it (credentials whose access token the Gmail stand-in
 * maps back to the mailbox, the sync state row, a registered watch), and the end-state check
 * that the stored inbox equals the provider's exactly; and the world they run in.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Account, SyncState } from '../../../db/entities/index.ts';
import { listThreads } from '../../../server/domain/mail/threads/thread.service.ts';
import { MAIL_SCOPE } from '../../../server/providers/oauth.ts';
import { createGmailFactory, type GmailFactory } from '../../../server/providers/gmail.ts';
import { startGmailStandIn, type GmailStandIn } from '../../../stand-ins/gmail.stand-in.ts';
import { buildTestApp, type TestApp } from '../../helpers/app.ts';
import { startProviders } from '../../helpers/providers.ts';
import { ModelTime } from './model-time.ts';

export interface ModelWorld {
  app: TestApp;
  gmail: GmailStandIn;
  /** Access tokens are `${tokenPrefix}${email}`: the stand-in's authorize() maps them back. */
  tokenPrefix: string;
}

/**
 * The model tests' world: the identity and AI stand-ins, a Gmail stand-in whose tokens are
 * `${tokenPrefix}${email}`, the app with no workers of its own and no PUBSUB_SUBSCRIPTION (the
 * schedule drives its own intakes and starts the production worker loop itself, model-loop.ts;
 * the scheduled jobs' handlers are the app's own), its job engine on the world's virtual time
 * (model-time.ts), and a Gmail client factory on the stand-in. `instance()` starts another
 * instance of the service on the same database and clock (its own job engine). `close` stops
 * them, last first.
 */
export async function startModelApp(
  tokenPrefix: string,
  seed: number,
): Promise<{
  app: TestApp;
  gmail: GmailStandIn;
  realGmail: GmailFactory;
  time: ModelTime;
  instance(): Promise<TestApp>;
  close(): Promise<void>;
}> {
  const cleanups: (() => unknown)[] = [];
  const ctx = { after: (fn: () => unknown) => void cleanups.push(fn) };
  const providers = await startProviders(ctx);
  const gmail = await startGmailStandIn({
    authorize: (token) => (token.startsWith(tokenPrefix) ? token.slice(tokenPrefix.length) : null),
    seed,
  });
  cleanups.push(() => gmail.close());
  const time = new ModelTime();
  // Shared by every instance: each reads the others' sessions and stored tokens.
  const env = {
    ...providers.env,
    GMAIL_API_URL: gmail.url,
    JOB_SUPERVISE_SECONDS: '600',
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
  const overrides = { liveInbox: { work: false, clock: time.clock } };
  const app = await buildTestApp(ctx, { env, overrides });
  return {
    app,
    gmail,
    realGmail: createGmailFactory({ rootUrl: gmail.url }),
    time,
    instance: () => buildTestApp(ctx, { databaseUrl: app.databaseUrl, env, overrides }),
    async close() {
      for (const fn of cleanups.reverse()) await fn();
    },
  };
}

export interface StoredRow {
  id: string;
  thread: string;
  unread: boolean;
  labels: string[];
}

export const modelSql =
  (app: TestApp) =>
  async <T = Record<string, unknown>>(q: string, params: unknown[] = []): Promise<T[]> =>
    (await app.container.orm.em.fork().execute(q, params)) as T[];

/** The grant a sign-in stores: an access token the Gmail stand-in maps back to `email`. */
export async function storeModelCredentials(w: ModelWorld, accountId: string, email: string): Promise<void> {
  await w.app.container.credentials.store(w.app.container.orm.em.fork(), accountId, {
    accessToken: `${w.tokenPrefix}${email}`,
    refreshToken: 'model-refresh-token',
    expiresAt: new Date(Date.now() + 24 * 3600_000),
    scope: `openid email ${MAIL_SCOPE}`,
  });
}

export async function createModelAccount(w: ModelWorld, email: string): Promise<string> {
  const em = w.app.container.orm.em.fork();
  const account = em.create(Account, { sub: `model-${randomUUID()}`, email });
  await em.flush();
  await storeModelCredentials(w, account.id, email);
  // As sign-in does: the account's sync state row exists from the start, its watch registered.
  await em.upsert(
    SyncState,
    { account: account.id, watchRenewedAt: new Date(), watchExpiresAt: new Date(Date.now() + 7 * 24 * 3600_000) },
    { onConflictFields: ['account'] },
  );
  return account.id;
}

export async function storedInbox(app: TestApp, accountId: string): Promise<StoredRow[]> {
  const rows = await modelSql(app)<{
    pid: string;
    ptid: string;
    is_unread: boolean;
    in_inbox: boolean;
    label_ids: string[];
  }>(
    `select m.provider_message_id as pid, t.provider_thread_id as ptid, m.is_unread, m.in_inbox, m.label_ids
       from mail_messages m join mail_threads t on t.id = m.thread_id where m.account_id = ?`,
    [accountId],
  );
  for (const r of rows) {
    assert.equal(r.in_inbox, r.label_ids.includes('INBOX'), `message ${r.pid}: in_inbox agrees with its labels`);
    assert.equal(r.is_unread, r.label_ids.includes('UNREAD'), `message ${r.pid}: is_unread agrees with its labels`);
  }
  return rows
    .filter((r) => r.in_inbox)
    .map((r) => ({ id: r.pid, thread: r.ptid, unread: r.is_unread, labels: [...r.label_ids].sort() }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

export function providerInbox(gmail: GmailStandIn, email: string): StoredRow[] {
  return gmail
    .inbox(email)
    .map((m) => ({ id: m.id, thread: m.threadId, unread: m.unread, labels: [...m.labelIds].sort() }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** Stored inbox == provider inbox, no duplicate rows, the thread list shows exactly the provider's inbox threads. */
export async function assertInboxMatches(w: ModelWorld, accountId: string, email: string, when: string): Promise<void> {
  const { app, gmail } = w;
  assert.deepEqual(
    await storedInbox(app, accountId),
    providerInbox(gmail, email),
    `${when}: stored inbox equals the provider's`,
  );
  const [dups] = await modelSql(app)<{
    messages: number;
    distinct_messages: number;
    threads: number;
    distinct_threads: number;
    empty_threads: number;
  }>(
    `select (select count(*)::int from mail_messages where account_id = ?) as messages,
            (select count(distinct provider_message_id)::int from mail_messages where account_id = ?) as distinct_messages,
            (select count(*)::int from mail_threads where account_id = ?) as threads,
            (select count(distinct provider_thread_id)::int from mail_threads where account_id = ?) as distinct_threads,
            (select count(*)::int from mail_threads t where account_id = ? and not exists (select 1 from mail_messages m where m.thread_id = t.id)) as empty_threads`,
    [accountId, accountId, accountId, accountId, accountId],
  );
  assert.equal(dups!.messages, dups!.distinct_messages, `${when}: no duplicate message rows`);
  assert.equal(dups!.threads, dups!.distinct_threads, `${when}: no duplicate thread rows`);
  assert.equal(dups!.empty_threads, 0, `${when}: no thread row without messages`);
  const list = await listThreads(app.container.prepared, accountId, { limit: 5_000, offset: 0 });
  const inbox = gmail.inbox(email);
  const expectedThreads = [...new Set(inbox.map((m) => m.threadId))].sort();
  assert.deepEqual(
    list.threads.map((t) => t.mailThreadId).sort(),
    expectedThreads,
    `${when}: the thread list shows the provider's inbox threads`,
  );
  assert.equal(list.total, expectedThreads.length, `${when}: thread list total`);
  const unreadThreads = new Set(inbox.filter((m) => m.unread).map((m) => m.threadId));
  for (const t of list.threads) {
    const unreadInInbox = unreadThreads.has(t.mailThreadId);
    if (unreadInInbox)
      assert.equal(t.isUnread, true, `${when}: thread ${t.mailThreadId} with an unread inbox message is unread`);
  }
}

/** The account's committed checkpoint (history id), null before the first one. */
export async function checkpoint(app: TestApp, accountId: string): Promise<bigint | null> {
  const h = (await app.syncState(accountId))?.history_id;
  return h ? BigInt(h) : null;
}
