/**
 * Threads and messages written straight into a test app's database (for tests of routes
 * that read synced mail, until sync is wired in), plus an AI feature with an injected
 * clock and timeout put in place of the app's.
 */
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { Account, MailMessage, MailThread } from '../../db/entities/index.ts';
import { createAiFeature, type AiFeature, type AiFeatureOptions } from '../../server/domain/ai/index.ts';
import { defaultAiProvider, type ContainerOverrides } from '../../server/container.ts';
import { buildTestApp, WEB_ORIGIN, type TestApp } from './app.ts';
import { csrfHeaders, signIn, startProviders } from './providers.ts';

export interface SeedMessage {
  fromName?: string;
  fromAddress?: string;
  subject?: string;
  snippet?: string;
  sentAt?: Date;
  bodyText?: string | null;
  bodyHtml?: string | null;
  isUnread?: boolean;
  /** null: the body is not fetched yet. */
  bodyFetchedAt?: Date | null;
}

export async function accountId(app: TestApp, email = 'alice@example.com'): Promise<string> {
  const account = await app.container.orm.em.fork().findOne(Account, { email });
  if (!account) throw new Error(`no account ${email}: sign in first`);
  return account.id;
}

let seq = 0;

/** Adds a message to a thread (defaults: from Bob, now, a short plain body). */
export async function addMessage(app: TestApp, threadId: string, m: SeedMessage = {}): Promise<string> {
  const em = app.container.orm.em.fork();
  const thread = await em.findOneOrFail(MailThread, { id: threadId });
  seq += 1;
  const sentAt = m.sentAt ?? new Date(Date.now() + seq);
  const message = em.create(MailMessage, {
    account: thread.account,
    thread: threadId,
    providerMessageId: `msg-${seq}-${randomUUID()}`,
    fromName: m.fromName ?? 'Bob Sender',
    fromAddress: m.fromAddress ?? 'bob@partner.example',
    subject: m.subject ?? thread.subject,
    snippet: m.snippet ?? 'Quick question about the report',
    sentAt,
    isUnread: m.isUnread ?? true,
    inInbox: true,
    labelIds: ['INBOX'],
    bodyText:
      m.bodyText === undefined
        ? 'Hi Alice,\n\nCould you send me the quarterly report by Friday?\n\nThanks,\nBob'
        : m.bodyText,
    bodyHtml: m.bodyHtml === undefined ? '' : m.bodyHtml,
    attachments: [],
    bodyFetchedAt: m.bodyFetchedAt === undefined ? new Date() : m.bodyFetchedAt,
  });
  thread.lastMessageAt = sentAt;
  thread.snippet = message.snippet;
  thread.lastFromName = message.fromName;
  thread.lastFromAddress = message.fromAddress;
  await em.flush();
  // As refreshThreads keeps it: the list shows the analysis of this message.
  await em.execute(
    'update mail_threads t set latest_message_id = (select id from mail_messages m where m.thread_id = t.id order by m.sent_at desc, m.provider_message_id desc limit 1) where t.id = ?',
    [threadId],
  );
  return message.id;
}

/** A thread of the account with `messages` (oldest first); none given: one default message. */
export async function seedThread(
  app: TestApp,
  opts: { email?: string; subject?: string; messages?: SeedMessage[] } = {},
): Promise<{ threadId: string; messageIds: string[]; accountId: string }> {
  const owner = await accountId(app, opts.email);
  const em = app.container.orm.em.fork();
  const thread = em.create(MailThread, {
    account: owner,
    providerThreadId: `thr-${randomUUID()}`,
    subject: opts.subject ?? 'Quarterly report',
    snippet: '',
    lastMessageAt: null,
    isUnread: true,
    inInbox: true,
  });
  await em.flush();
  const messageIds: string[] = [];
  const base = Date.now() - 60_000;
  for (const [i, m] of (opts.messages ?? [{}]).entries()) {
    messageIds.push(await addMessage(app, thread.id, { sentAt: new Date(base + i * 1000), ...m }));
  }
  return { threadId: thread.id, messageIds, accountId: owner };
}

/** A settable clock. */
export function testClock(start: Date) {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    set(d: Date) {
      current = d.getTime();
    },
  };
}

/** Options of the app's AI feature (an injected clock, a shorter timeout), given when the app is built. */
export type AiOverrides = NonNullable<ContainerOverrides['ai']>;

/** A second AI feature over the app's database, as another instance of the service would have. */
export function anotherAiFeature(
  app: TestApp,
  opts: Partial<Omit<AiFeatureOptions, 'limits' | 'orm' | 'log'>> = {},
): AiFeature {
  const c = app.container;
  const provider = opts.provider ?? defaultAiProvider(c.config, c.log);
  return createAiFeature({
    limits: c.config.aiBudget,
    orm: c.orm,
    log: c.log,
    ensureBodies: c.threadBodies.ensure,
    ...opts,
    provider,
  });
}

/**
 * Signed-in AI test setup: stand-in providers, the app (TRUST_PROXY on, so each test can
 * use its own client address and so its own rate-limit buckets), a browser, its CSRF token.
 */
export async function aiSetup(
  t: { after(fn: () => unknown): void },
  env: Record<string, string | undefined> = {},
  ai: AiOverrides = {},
) {
  const providers = await startProviders(t);
  const app = await buildTestApp(t, { env: { ...providers.env, TRUST_PROXY: 'true', ...env }, overrides: { ai } });
  const browser = app.browser();
  const { csrfToken } = await signIn(browser);
  let client = 0;
  /** A fresh client address: its own rate-limit buckets. */
  const newIp = () => `10.77.${Math.floor(++client / 250)}.${(client % 250) + 1}`;
  let ip = newIp();
  const headers = (extra: Record<string, string> = {}) => ({
    ...csrfHeaders(csrfToken, WEB_ORIGIN),
    'X-Forwarded-For': ip,
    ...extra,
  });
  return {
    providers,
    openai: providers.openai,
    app,
    browser,
    csrfToken,
    /** Switches to a new client address (call at the start of each test). */
    freshClient: () => {
      ip = newIp();
    },
    headers,
    post: (path: string, json?: unknown, extra?: Record<string, string>) =>
      browser.fetch(path, { method: 'POST', headers: headers(extra), ...(json === undefined ? {} : { json }) }),
    analyze: (threadId: string) =>
      browser.fetch(`/api/mail/threads/${threadId}/analyze`, { method: 'POST', headers: headers() }),
    draft: (threadId: string, json?: unknown) =>
      browser.fetch(`/api/mail/threads/${threadId}/draft`, {
        method: 'POST',
        headers: headers(),
        ...(json === undefined ? {} : { json }),
      }),
  };
}
export type AiSetup = Awaited<ReturnType<typeof aiSetup>>;

/** aiSetup once for the enclosing describe block (before/after hooks); returns an accessor. */
export function sharedAiSetup(env: Record<string, string | undefined> = {}, ai: AiOverrides = {}): () => AiSetup {
  const cleanups: (() => unknown)[] = [];
  let setup: AiSetup | undefined;
  before(async () => {
    setup = await aiSetup({ after: (fn) => cleanups.push(fn) }, env, ai);
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return () => setup!;
}

/** Another account (no session), for ownership checks. */
export async function otherAccount(app: TestApp, email = 'mallory@example.com'): Promise<string> {
  const em = app.container.orm.em.fork();
  const account = em.create(Account, { sub: `sub-${randomUUID()}`, email });
  await em.flush();
  return account.id;
}
