/**
 * The world the fuzzer runs against: one in-process server wired to the stand-in providers
 * (limits raised, client addresses from X-Forwarded-For so every request has its own
 * buckets), a few signed-in "lanes" (one account each, with synced threads) and the
 * operation table derived from the app router: every procedure, its REST route if any, its
 * Zod input as JSON schema, and whether the spec wants a session, CSRF or a thread id.
 */
import { createHash } from 'node:crypto';
import { appRouter } from '../../server/trpc/routers/index.ts';
import { buildTestApp, WEB_ORIGIN, type TestApp } from '../helpers/app.ts';
import { Browser } from '../../harness/browser.ts';
import { startProviders, type Providers } from '../helpers/providers.ts';
import { inputSchemas, type InputSchemas } from './fuzz-kit.ts';

export interface Operation {
  procedure: string;
  type: 'query' | 'mutation';
  rest?: { method: string; path: string };
  schemas: InputSchemas;
  /** Needs a session (spec part 4). */
  authed: boolean;
  /** Needs X-CSRF-Token and Origin (spec part 5.4, settings from runtime contract part 5). */
  csrf: boolean;
  /** Needs the status-admin credential. */
  admin: boolean;
  /** Takes a thread id that must belong to the caller. */
  takesThread: boolean;
  /** Has a fixed per-route rate limit (requests then come from a fresh client address). */
  fixedBucket: boolean;
}

/** The spec's answer to "who may call this", per procedure (api-spec part 4, runtime contract 4d and 5). */
export const AUTHED = new Set([
  'auth.disconnect',
  'auth.deleteAccount',
  'mail.sync',
  'mail.syncState',
  'mail.threads',
  'mail.thread',
  'mail.messageBody',
  'mail.analyze',
  'mail.draft',
  'mail.correctAnalysis',
  'settings.get',
  'settings.update',
]);
export const CSRF = new Set([
  'auth.disconnect',
  'auth.deleteAccount',
  'mail.sync',
  'mail.analyze',
  'mail.draft',
  'mail.correctAnalysis',
  'settings.update',
]);
export const ADMIN = new Set(['status.createIncident', 'status.updateIncident']);
export const THREAD = new Set([
  'mail.thread',
  'mail.messageBody',
  'mail.analyze',
  'mail.draft',
  'mail.correctAnalysis',
]);
export const SPEC_PROCEDURES = [
  'system.health',
  'auth.session',
  'auth.logout',
  'auth.disconnect',
  'auth.deleteAccount',
  'mail.sync',
  'mail.syncState',
  'mail.threads',
  'mail.thread',
  'mail.analyze',
  'mail.draft',
  'settings.get',
  'settings.update',
  'analytics.event',
  'status.incidents',
  'status.createIncident',
  'status.updateIncident',
  // Issue 31: one message's bodies, for the messages a thread answer leaves out past its body budget.
  'mail.messageBody',
  // Runtime contract 5 (issue 45): the user's correction of an analysis.
  'mail.correctAnalysis',
  // Runtime contract 5: the live events (GET /api/mail/events), a subscription, not fuzzed (a stream never answers in full).
  'mail.events',
];

/** The procedures whose answer is an event stream: listed, but left out of the fuzzed operations. */
export const STREAMING_PROCEDURES = ['mail.events'];

type ProcDef = {
  _def: {
    type: 'query' | 'mutation' | 'subscription';
    inputs: any[];
    meta?: { openapi?: { method: string; path: string }; rateLimit?: string };
  };
};

export function operations(): Operation[] {
  const procs = appRouter._def.procedures as unknown as Record<string, ProcDef>;
  return Object.entries(procs)
    .filter(([, p]) => p._def.type !== 'subscription')
    .map(([procedure, p]) => ({
      procedure,
      type: p._def.type as 'query' | 'mutation',
      rest: p._def.meta?.openapi
        ? { method: p._def.meta.openapi.method, path: p._def.meta.openapi.path }
        : procedure === 'auth.deleteAccount'
          ? { method: 'DELETE', path: '/auth/account' }
          : undefined,
      schemas: inputSchemas(p._def.inputs[0]),
      authed: AUTHED.has(procedure),
      csrf: CSRF.has(procedure),
      admin: ADMIN.has(procedure),
      takesThread: THREAD.has(procedure),
      fixedBucket: !!p._def.meta?.rateLimit && p._def.meta.rateLimit !== 'global',
    }));
}

export interface Lane {
  name: string;
  user: { sub: string; email: string };
  browser: Browser;
  csrfToken: string;
  /** Thread ids the account owns now. */
  threadIds: string[];
  /** A cookie header of a session that expired (idle), one past its absolute lifetime, one logged out. */
  deadCookies: string[];
  /** Set when a response ended this lane's session; the lane signs in again before its next request. */
  stale: boolean;
  signIns: number;
}

export interface FuzzWorld {
  app: TestApp;
  providers: Providers;
  lanes: Lane[];
  /** Every thread id each account ever had: id -> lane name (ids are never reused). */
  threadOwner: Map<string, string>;
  incidentIds: string[];
  nextIp(): string;
  signIn(lane: Lane): Promise<void>;
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  redirects: string[];
}

const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');

export async function startFuzzWorld(t: { after(fn: () => unknown): void }, laneNames: string[]): Promise<FuzzWorld> {
  const providers = await startProviders(t);
  const app = await buildTestApp(t, {
    env: {
      ...providers.env,
      TRUST_PROXY: 'true',
      RATE_LIMIT_MAX: '1000000',
      AI_DAILY_TOKEN_BUDGET: '1000000000',
      AI_MONTHLY_TOKEN_BUDGET: '1000000000',
    },
  });
  const sql = async <T>(text: string, params: unknown[] = []) =>
    (await app.container.pool.query(text, params)).rows as T[];
  let ip = 0;
  const nextIp = () => {
    ip += 1;
    return `10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${ip & 255}`;
  };
  let lock: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = lock.then(fn, fn);
    lock = run.catch(() => undefined);
    return run;
  };
  const threadOwner = new Map<string, string>();

  /** The redirect flow, serialised (the identity stand-in has one "current user"). */
  const browserSignIn = (lane: Lane, browser: Browser) =>
    exclusive(async () => {
      providers.identity.setCurrentUser(lane.user);
      const headers = { 'X-Forwarded-For': nextIp() };
      const start = await browser.fetch('/auth/provider', { headers });
      if (start.status !== 302) throw new Error(`sign-in start answered ${start.status}`);
      const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
      const done = await browser.fetch(consent.headers.get('location')!, { headers });
      if (done.headers.get('location') !== `${WEB_ORIGIN}/?connected=1`)
        throw new Error(`sign-in ended at ${done.headers.get('location')}`);
      const session = await (await browser.fetch('/auth/session', { headers })).json();
      if (!session.authenticated) throw new Error('sign-in did not authenticate');
      return session.csrfToken as string;
    });

  const signIn = async (lane: Lane) => {
    // The new session reaches the lane (and so the other lanes, whose 'other-lane' requests
    // borrow its cookie) only once it is synced and listed: POST /auth/logout needs no CSRF
    // token, so another lane's fuzzed logout could otherwise end it between the sync and the
    // list below (which then answered 401).
    const browser = new Browser(app.url, WEB_ORIGIN);
    const csrfToken = await browserSignIn(lane, browser);
    lane.signIns += 1;
    const headers = { 'X-CSRF-Token': csrfToken, Origin: WEB_ORIGIN };
    // Sync (a deleted account comes back empty) and learn the thread ids.
    for (let i = 0; i < 5; i++) {
      const sync = await browser.fetch('/api/mail/sync', {
        method: 'POST',
        headers: { ...headers, 'X-Forwarded-For': nextIp() },
      });
      if (sync.status !== 200) throw new Error(`sync answered ${sync.status}: ${await sync.text()}`);
      if (!(await sync.json()).hasMore) break;
    }
    const listed = await browser.fetch('/api/mail/threads?limit=100', { headers: { 'X-Forwarded-For': nextIp() } });
    if (listed.status !== 200)
      throw new Error(`the thread list after sign-in answered ${listed.status}: ${await listed.text()}`);
    const list = await listed.json();
    lane.threadIds = list.threads.map((th: { id: string }) => th.id);
    for (const id of lane.threadIds) threadOwner.set(id, lane.name);
    lane.browser = browser;
    lane.csrfToken = csrfToken;
    lane.stale = false;
  };

  const lanes: Lane[] = [];
  for (const [i, name] of laneNames.entries()) {
    const user = { sub: `fuzz-${name}`, email: `${name}@example.com` };
    providers.gmail.seed(user.email, 6, { seed: 100 + i, sentReplies: true });
    const lane: Lane = {
      name,
      user,
      browser: new Browser(app.url, WEB_ORIGIN),
      csrfToken: '',
      threadIds: [],
      deadCookies: [],
      stale: true,
      signIns: 0,
    };
    await signIn(lane);
    // Dead sessions of this account: idle-expired, past the absolute lifetime, logged out.
    for (const kind of ['idle', 'absolute', 'logout'] as const) {
      const b = new Browser(app.url, WEB_ORIGIN);
      await browserSignIn(lane, b);
      const key = b.cookies.get('mia_session')!;
      if (kind === 'idle')
        await sql(`update sessions set expires_at = now() - interval '1 minute' where id = $1`, [sha256(key)]);
      if (kind === 'absolute')
        await sql(`update sessions set data = jsonb_set(data, '{signedInAt}', '1') where id = $1`, [sha256(key)]);
      const header = b.cookieHeader();
      if (kind === 'logout')
        await b.fetch('/auth/logout', { method: 'POST', headers: { 'X-Forwarded-For': nextIp() } });
      lane.deadCookies.push(header);
    }
    lanes.push(lane);
  }

  return {
    app,
    providers,
    lanes,
    threadOwner,
    incidentIds: [],
    nextIp,
    signIn,
    sql,
    redirects: [`${providers.identity.authUrl}?`, `${WEB_ORIGIN}/?error=oauth_failed`, `${WEB_ORIGIN}/?connected=1`],
  };
}
