/**
 * The world of the security review tests: the stand-in providers, one app (client address
 * from X-Forwarded-For, so every request can have its own rate-limit buckets), and two
 * signed-in users with synced mail of their own. Also the response assertions of the
 * envelope and of /trpc errors, and a snapshot of everything a refused call must not touch.
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { randomBytes } from 'node:crypto';
import { buildTestApp, WEB_ORIGIN, type TestApp } from '../../helpers/app.ts';
import { Browser } from '../../../harness/browser.ts';
import { startProviders, type Providers } from '../../helpers/providers.ts';
import { readSyncStateRows } from '../../../server/domain/mail/sync/states/index.ts';

export interface User {
  sub: string;
  email: string;
  browser: ClientBrowser;
  csrfToken: string;
  accountId: string;
  threadIds: string[];
  /** Distinctive subjects and bodies of the user's mail. */
  mail: string[];
}

/** A browser that sends every request from a new client address (its own rate-limit buckets). */
export class ClientBrowser extends Browser {
  static next = 0;
  override fetch(pathOrUrl: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    ClientBrowser.next += 1;
    if (!headers.has('X-Forwarded-For'))
      headers.set('X-Forwarded-For', `10.60.${(ClientBrowser.next >> 8) & 255}.${ClientBrowser.next & 255}`);
    return super.fetch(pathOrUrl, { ...init, headers });
  }
}

export interface ReviewWorld {
  app: TestApp;
  providers: Providers;
  alice: User;
  bob: User;
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** A fresh browser without any cookie (sends no Origin unless told). */
  stranger(origin?: string): ClientBrowser;
  signIn(
    user: { sub: string; email: string },
    browser?: ClientBrowser,
  ): Promise<{ browser: ClientBrowser; csrfToken: string }>;
}

export async function startReviewWorld(t: { after(fn: () => unknown): void }): Promise<ReviewWorld> {
  const providers = await startProviders(t);
  const app = await buildTestApp(t, { env: { ...providers.env, TRUST_PROXY: 'true', RATE_LIMIT_MAX: '100000' } });
  const sql = async <T>(text: string, params: unknown[] = []) =>
    (await app.container.pool.query(text, params)).rows as T[];
  providers.openai.setResponder((_b, ctx) =>
    ctx.schemaName?.includes('draft')
      ? { subject: 'Re: x', body: 'Thanks.', language: 'English' }
      : { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY', confidence: 0.5, reason: 'r', suggestedAction: 's' },
  );

  const signIn = async (user: { sub: string; email: string }, browser = new ClientBrowser(app.url, WEB_ORIGIN)) => {
    providers.identity.setCurrentUser(user);
    const start = await browser.fetch('/auth/provider');
    const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const done = await browser.fetch(consent.headers.get('location')!);
    assert.equal(done.headers.get('location'), `${WEB_ORIGIN}/?connected=1`, `${user.email} signed in`);
    const session = await (await browser.fetch('/auth/session')).json();
    assert.equal(session.authenticated, true);
    return { browser, csrfToken: session.csrfToken as string };
  };

  const makeUser = async (sub: string, email: string): Promise<User> => {
    const mail: string[] = [];
    for (let i = 0; i < 3; i++) {
      const subject = `subject-${sub}-${i}-${randomBytes(6).toString('hex')}`;
      const body = `body-${sub}-${i}-${randomBytes(6).toString('hex')}`;
      mail.push(subject, body);
      providers.gmail.addMessage(email, { subject, bodyText: `Hello,\n${body}` });
    }
    const { browser, csrfToken } = await signIn({ sub, email });
    const sync = await browser.fetch('/api/mail/sync', { method: 'POST', headers: { 'X-CSRF-Token': csrfToken } });
    assert.equal(sync.status, 200, await sync.clone().text());
    const list = await (await browser.fetch('/api/mail/threads')).json();
    const { id: accountId } = (await app.account({ sub }))!;
    return {
      sub,
      email,
      browser,
      csrfToken,
      accountId,
      threadIds: list.threads.map((th: { id: string }) => th.id),
      mail,
    };
  };
  const alice = await makeUser('user-alice', 'alice@example.com');
  const bob = await makeUser('user-bob', 'bob@example.com');
  assert.equal(alice.threadIds.length, 3);
  assert.equal(bob.threadIds.length, 3);
  return { app, providers, alice, bob, sql, stranger: (origin?: string) => new ClientBrowser(app.url, origin), signIn };
}

/** One world for the enclosing describe block. */
export function sharedReviewWorld(): () => ReviewWorld {
  const cleanups: (() => unknown)[] = [];
  let world: ReviewWorld | undefined;
  before(async () => {
    world = await startReviewWorld({ after: (fn) => cleanups.push(fn) });
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return () => world!;
}

/** A browser holding `user`'s cookies that adds no Origin by itself. */
export function asUser(world: ReviewWorld, user: User): ClientBrowser {
  const b = new ClientBrowser(world.app.url);
  for (const [k, v] of user.browser.cookies) b.cookies.set(k, v);
  return b;
}

/** Asserts the spec's error answer (REST envelope or /trpc error) with `code`; returns its text. */
export async function expectError(res: Response, code: string, status: number, where: string): Promise<string> {
  const text = await res.text();
  assert.equal(res.status, status, `${where}: status (${text.slice(0, 300)})`);
  const body = JSON.parse(text);
  const isTrpc = new URL(res.url || 'http://x/').pathname.startsWith('/trpc/') || body.error?.data !== undefined;
  if (isTrpc) {
    assert.equal(body.error?.data?.appCode, code, `${where}: appCode (${text.slice(0, 300)})`);
    assert.equal(body.error.data.requestId, res.headers.get('x-request-id'), `${where}: requestId`);
  } else {
    assert.equal(body.error?.code, code, `${where}: code (${text.slice(0, 300)})`);
    assert.equal(body.error.requestId, res.headers.get('x-request-id'), `${where}: requestId`);
  }
  return text;
}

/** Everything a refused call must leave as it was: provider calls and the account's rows. */
export async function snapshot(world: ReviewWorld): Promise<Record<string, unknown>> {
  const count = async (q: string) => Number((await world.sql<{ n: string }>(q))[0].n);
  const gmailCalls = Object.values(world.providers.gmail.calls).reduce((a, b) => a + b, 0);
  return {
    gmailCalls,
    openaiCalls: world.providers.openai.calls.total,
    revokes: world.providers.identity.calls.revoke,
    accounts: await world.sql('select id, signature, response_style, needs_reconnect from accounts order by id'),
    syncStates: (await readSyncStateRows(world.app.container.orm.em.fork())).map((s) => ({
      account_id: s.account_id,
      history_id: s.history_id,
      last_synced_at: s.last_synced_at,
    })),
    analyses: await count('select count(*) n from analyses'),
    drafts: await count('select count(*) n from drafts'),
    aiUsage: await count('select count(*) n from ai_usage'),
    credentials: await count('select count(*) n from credentials'),
    sessions: await count('select count(*) n from sessions'),
    bodiesFetched: await count('select count(*) n from mail_messages where body_fetched_at is not null'),
    messages: await count('select count(*) n from mail_messages'),
  };
}
