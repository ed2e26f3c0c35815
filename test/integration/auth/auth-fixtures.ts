/**
 * Shared steps of the auth integration tests: an app wired to the stand-in providers, the
 * consent leg of the redirect flow done by hand (so a test can tamper with the callback),
 * SQL against the app's own database, and envelope / tRPC error assertions.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { buildTestApp, WEB_ORIGIN, type TestApp } from '../../helpers/app.ts';
import type { Browser } from '../../../harness/browser.ts';
import { startProviders, type Providers } from '../../helpers/providers.ts';
import type { MailWatchControl } from '../../../server/domain/auth/auth.service.ts';

export const SESSION_COOKIE = 'mia_session';
export const PREAUTH_COOKIE = 'mia_oauth';
export const OAUTH_FAILED_URL = `${WEB_ORIGIN}/?error=oauth_failed`;
export const CONNECTED_URL = `${WEB_ORIGIN}/?connected=1`;
export const JSON_TYPE = { 'Content-Type': 'application/json' };

export const sha256hex = (v: string) => createHash('sha256').update(v).digest('hex');

export interface AuthWorld {
  providers: Providers;
  app: TestApp;
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}

interface TestContext {
  after(fn: () => unknown): void;
}

/** `mailWatch`: a watch control to build the app with, given the providers (to record what they saw). */
export async function authWorld(
  t: TestContext,
  env: Record<string, string | undefined> = {},
  opts: { mailWatch?: (providers: Providers) => MailWatchControl } = {},
): Promise<AuthWorld> {
  const providers = await startProviders(t);
  const app = await buildTestApp(t, {
    env: { ...providers.env, ...env },
    overrides: { mailWatch: opts.mailWatch?.(providers) },
  });
  return { providers, app, sql: sqlOf(app) };
}

/**
 * One world for a file or describe block, built before its tests and torn down after them, for
 * tests that can share one account store (each resets what it counts). Mind the fixed per-client
 * limits of the routes the tests call (sign-in 20 a minute, analytics 60): the buckets are shared too.
 */
export function sharedAuthWorld(env: Record<string, string | undefined> = {}): () => AuthWorld {
  let world: AuthWorld | undefined;
  const cleanups: (() => unknown)[] = [];
  before(async () => {
    world = await authWorld({ after: (fn) => cleanups.push(fn) }, env);
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return () => world!;
}

/**
 * A shared world as a test that had its own found it: no account, session or pending state
 * stored, and an identity provider with no live grant, no fault pending, no scope override and
 * zeroed counters, consenting as alice.
 */
export async function freshWorld(world: () => AuthWorld): Promise<AuthWorld> {
  const w = world();
  await w.sql('delete from accounts');
  await w.sql('delete from sessions');
  await w.sql('delete from oauth_states');
  const { identity } = w.providers;
  for (const sub of new Set(identity.grants().map((g) => g.sub))) identity.revokeUser(sub);
  identity.clearFaults();
  identity.setGrantedScope(null);
  identity.resetCounters();
  identity.setCurrentUser('user-alice');
  return w;
}

export function sqlOf(app: TestApp) {
  return async <T = Record<string, unknown>>(text: string, params: unknown[] = []) =>
    (await app.container.pool.query(text, params)).rows as T[];
}

/**
 * GET /auth/provider in `browser`, then the consent screen (outside the browser's cookie jar,
 * as the provider is another site). Returns the consent URL and the callback path+query the
 * provider redirected to, without calling it.
 */
export async function consent(browser: Browser): Promise<{ authorizeUrl: URL; callback: string; state: string }> {
  const start = await browser.fetch('/auth/provider');
  assert.equal(start.status, 302, `GET /auth/provider answered ${start.status}`);
  const authorizeUrl = new URL(start.headers.get('location')!);
  const answer = await fetch(authorizeUrl, { redirect: 'manual' });
  assert.equal(answer.status, 302, 'the consent stand-in redirects back');
  const back = new URL(answer.headers.get('location')!);
  return { authorizeUrl, callback: back.pathname + back.search, state: authorizeUrl.searchParams.get('state')! };
}

/** Calls the callback and returns the response (302 expected either way). */
export async function callback(browser: Browser, pathAndQuery: string): Promise<Response> {
  return browser.fetch(pathAndQuery);
}

export async function sessionOf(
  browser: Browser,
): Promise<{ authenticated: boolean; csrfToken: string; email?: string }> {
  const res = await browser.fetch('/auth/session');
  assert.equal(res.status, 200);
  return res.json();
}

export async function accountBySub(world: AuthWorld, sub: string) {
  return (await world.app.account({ sub }))!;
}

/** Asserts a REST error envelope with `code` and `status`; returns the body. */
export async function expectEnvelope(res: Response, code: string, status: number) {
  const text = await res.text();
  assert.equal(res.status, status, `status (body ${text})`);
  const body = JSON.parse(text);
  assert.equal(body.error?.code, code, `code (body ${text})`);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.requestId.length > 0, 'requestId present');
  assert.equal(body.error.requestId, res.headers.get('x-request-id'), 'requestId is the request id');
  return body as {
    error: { code: string; message: string; requestId: string; details?: { issues: { path: string; code: string }[] } };
  };
}

/** Asserts a /trpc error with the spec's code in error.data.appCode; returns the body. */
export async function expectTrpcError(res: Response, appCode: string, status: number) {
  const text = await res.text();
  assert.equal(res.status, status, `status (body ${text})`);
  const body = JSON.parse(text);
  assert.equal(body.error?.data?.appCode, appCode, `appCode (body ${text})`);
  assert.ok(body.error.data.requestId.length > 0, 'requestId present');
  assert.ok(!text.includes('"stack"'), 'no stack');
  return body as { error: { data: { appCode: string; requestId: string; issues?: { path: string; code: string }[] } } };
}

/** Redirect-flow failure: a 302 to the web app with error=oauth_failed, never JSON. */
export function assertOAuthFailed(res: Response, why: string) {
  assert.equal(res.status, 302, `${why}: 302 (got ${res.status})`);
  assert.equal(res.headers.get('location'), OAUTH_FAILED_URL, `${why}: redirect target`);
  assert.ok(!/json/i.test(res.headers.get('content-type') ?? ''), `${why}: not a JSON error`);
}
