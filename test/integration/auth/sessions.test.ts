/**
 * Sessions (runtime-contract 4a "Cookies", api-spec part 5): koa-session over the PostgreSQL
 * store. Cookie attributes (Secure under an https PUBLIC_BASE_URL), signing with
 * SESSION_SECRET and key rotation, a new key at sign-in (no fixation), GET /auth/session,
 * logout, and the idle / absolute lifetimes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { buildTestApp, WEB_ORIGIN } from '../../helpers/app.ts';
import { Browser } from '../../../harness/browser.ts';
import { csrfHeaders, signIn, startProviders } from '../../helpers/providers.ts';
import {
  authWorld,
  CONNECTED_URL,
  expectEnvelope,
  expectTrpcError,
  freshWorld,
  JSON_TYPE,
  PREAUTH_COOKIE,
  SESSION_COOKIE,
  sessionOf,
  sha256hex,
  sharedAuthWorld,
} from './auth-fixtures.ts';

const secret = () => randomBytes(24).toString('base64url');

function cookieLine(res: Response, name: string): string | undefined {
  // The last one wins in a browser (sign-in clears the old key, then sets the new one).
  return res.headers
    .getSetCookie()
    .filter((c) => c.startsWith(`${name}=`) && !/^[^=]+=;/.test(c))
    .at(-1);
}

function attrs(line: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const part of line.split(';').slice(1)) {
    const [k, ...v] = part.trim().split('=');
    map.set(k.toLowerCase(), v.join('='));
  }
  return map;
}

function copyCookies(from: Browser, to: Browser) {
  for (const [k, v] of from.cookies) to.cookies.set(k, v);
}

/** The consent leg by hand, returning the callback path (the redirect URI may name another host). */
async function callbackPath(browser: Browser): Promise<string> {
  const start = await browser.fetch('/auth/provider');
  const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location')!);
  return back.pathname + back.search;
}

/**
 * Two worlds shared by the tests that sign in over plain http with the default secret: the
 * cookie and fixation tests, then the session and logout ones (7 sign-ins each, under the
 * sign-in routes' 20 a minute per client). Each test starts from a fresh world (freshWorld).
 */
const cookieWorld = sharedAuthWorld();
const sessionWorld = sharedAuthWorld();

describe('session cookie attributes', () => {
  it('HttpOnly, SameSite=Lax, Path=/, signed, and not Secure under an http PUBLIC_BASE_URL', async () => {
    const world = await freshWorld(cookieWorld);
    const browser = world.app.browser();
    const res = await browser.fetch(await callbackPath(browser));
    assert.equal(res.headers.get('location'), CONNECTED_URL);
    const line = cookieLine(res, SESSION_COOKIE);
    assert.ok(line, 'session cookie set at sign-in');
    const a = attrs(line);
    assert.ok(a.has('httponly'), 'HttpOnly');
    assert.equal(a.get('samesite')?.toLowerCase(), 'lax');
    assert.equal(a.get('path'), '/');
    assert.ok(!a.has('secure'), 'no Secure over plain http');
    assert.ok(cookieLine(res, `${SESSION_COOKIE}.sig`), 'signature cookie');
  });

  it('adds Secure and the cookie prefixes when PUBLIC_BASE_URL is https (session and pre-auth cookies alike)', async (t) => {
    const providers = await startProviders(t);
    const app = await buildTestApp(t, { env: { ...providers.env, PUBLIC_BASE_URL: 'https://mail.example.test' } });
    assert.equal(app.config.secureCookies, true);
    const browser = app.browser();
    const start = await browser.fetch('/auth/provider');
    assert.equal(start.status, 302);
    const preauth = cookieLine(start, `__Secure-${PREAUTH_COOKIE}`);
    assert.ok(preauth && attrs(preauth).has('secure'), `pre-auth cookie Secure: ${preauth}`);
    assert.equal(
      new URL(start.headers.get('location')!).searchParams.get('redirect_uri'),
      'https://mail.example.test/auth/provider/callback',
    );
    const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const back = new URL(consent.headers.get('location')!);
    assert.equal(back.origin, 'https://mail.example.test');
    const res = await browser.fetch(back.pathname + back.search);
    assert.equal(res.headers.get('location'), CONNECTED_URL);
    const line = cookieLine(res, `__Host-${SESSION_COOKIE}`);
    assert.ok(line, 'session cookie set, as __Host-mia_session');
    const a = attrs(line);
    assert.ok(a.has('secure'), `Secure: ${line}`);
    assert.ok(a.has('httponly'));
    assert.equal(a.get('samesite')?.toLowerCase(), 'lax');
    assert.equal(a.get('path'), '/');
    assert.equal((await sessionOf(browser)).authenticated, true);
  });
});

describe('cookie signing with SESSION_SECRET', () => {
  it('refuses a cookie whose value or signature was tampered with, or that lacks a signature', async () => {
    const world = await freshWorld(cookieWorld);
    const browser = world.app.browser();
    await signIn(browser);
    const value = browser.cookies.get(SESSION_COOKIE)!;
    const sig = browser.cookies.get(`${SESSION_COOKIE}.sig`)!;

    const flipped = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    const cases: [string, Record<string, string>][] = [
      ['value changed', { [SESSION_COOKIE]: flipped(value), [`${SESSION_COOKIE}.sig`]: sig }],
      ['signature changed', { [SESSION_COOKIE]: value, [`${SESSION_COOKIE}.sig`]: flipped(sig) }],
      ['no signature', { [SESSION_COOKIE]: value }],
    ];
    for (const [why, cookies] of cases) {
      const b = world.app.browser();
      for (const [k, v] of Object.entries(cookies)) b.cookies.set(k, v);
      assert.equal((await sessionOf(b)).authenticated, false, why);
      const res = await b.fetch('/auth/provider/disconnect', { method: 'POST' });
      await expectEnvelope(res, 'AUTH_REQUIRED', 401);
    }
    assert.equal((await sessionOf(browser)).authenticated, true, 'the genuine cookie still works');
  });

  it('rotation: a cookie signed with the old key still works under SESSION_SECRET=new,old, and not once the old key is gone', async (t) => {
    const providers = await startProviders(t);
    const oldKey = secret();
    const newKey = secret();
    const first = await buildTestApp(t, { env: { ...providers.env, SESSION_SECRET: oldKey } });
    const browser = first.browser();
    const { email } = await signIn(browser);

    const rotated = await buildTestApp(t, {
      databaseUrl: first.databaseUrl,
      env: { ...providers.env, SESSION_SECRET: `${newKey},${oldKey}` },
    });
    const newOnly = await buildTestApp(t, {
      databaseUrl: first.databaseUrl,
      env: { ...providers.env, SESSION_SECRET: newKey },
    });
    try {
      const stale = newOnly.browser();
      copyCookies(browser, stale);
      assert.equal((await sessionOf(stale)).authenticated, false, 'old-key cookie refused without the old key');

      const b2 = rotated.browser();
      copyCookies(browser, b2);
      const oldSig = b2.cookies.get(`${SESSION_COOKIE}.sig`);
      const res = await b2.fetch('/auth/session');
      const session = await res.json();
      assert.equal(session.authenticated, true, 'old-key cookie accepted after rotation');
      assert.equal(session.email, email);
      // Verified by the old key, the cookie is re-signed with the new one.
      assert.notEqual(b2.cookies.get(`${SESSION_COOKIE}.sig`), oldSig, 're-signed with the newest key');
      const b3 = newOnly.browser();
      copyCookies(b2, b3);
      assert.equal((await sessionOf(b3)).authenticated, true, 'the re-signed cookie works under the new key alone');
    } finally {
      // Both share the first app's database: close them before it drops it.
      await rotated.close();
      await newOnly.close();
    }
  });
});

describe('session key at sign-in (no fixation)', () => {
  it('a cookie held before sign-in is replaced, and the pre-sign-in key is useless afterwards', async () => {
    const world = await freshWorld(cookieWorld);
    const { identity } = world.providers;
    // Mallory signs in and plants her session cookie in the victim's browser.
    identity.setCurrentUser({ sub: 'user-mallory', email: 'mallory@example.com' });
    const mallory = world.app.browser();
    await signIn(mallory);
    const planted = mallory.cookies.get(SESSION_COOKIE)!;
    const victim = world.app.browser();
    copyCookies(mallory, victim);
    assert.equal((await sessionOf(victim)).email, 'mallory@example.com', 'the planted cookie is live before sign-in');
    const plantedCsrf = (await sessionOf(victim)).csrfToken;

    identity.setCurrentUser({ sub: 'user-alice', email: 'alice@example.com' });
    const { email, csrfToken } = await signIn(victim);
    assert.equal(email, 'alice@example.com');
    const after = victim.cookies.get(SESSION_COOKIE)!;
    assert.notEqual(after, planted, 'a new session key after sign-in');
    assert.notEqual(csrfToken, plantedCsrf, 'a new CSRF token after sign-in');

    // Whoever holds the pre-sign-in key gets nothing: not Alice's session, not a session at all.
    const holder = world.app.browser();
    copyCookies(mallory, holder);
    const s = await sessionOf(holder);
    assert.equal(s.authenticated, false);
    assert.equal(s.email, undefined);
    const rows = await world.sql<{ id: string }>('select id from sessions');
    assert.ok(!rows.some((r) => r.id === sha256hex(planted)), 'the old key has no server-side row');
    assert.ok(
      rows.some((r) => r.id === sha256hex(after)),
      'the new key has one',
    );
  });

  it('re-signing in within the same browser also changes the key and retires the old one', async () => {
    const world = await freshWorld(cookieWorld);
    const browser = world.app.browser();
    await signIn(browser);
    const before = new Browser(world.app.url, WEB_ORIGIN);
    copyCookies(browser, before);
    await signIn(browser);
    assert.notEqual(browser.cookies.get(SESSION_COOKIE), before.cookies.get(SESSION_COOKIE));
    assert.equal((await sessionOf(before)).authenticated, false);
    assert.equal((await sessionOf(browser)).authenticated, true);
  });

  it('the server stores a hash of the key, never the key, and no provider tokens in the session', async () => {
    const world = await freshWorld(cookieWorld);
    const browser = world.app.browser();
    await signIn(browser);
    const key = browser.cookies.get(SESSION_COOKIE)!;
    const rows = await world.sql<{ id: string; account_id: string; data: Record<string, unknown> }>(
      'select id, account_id, data from sessions',
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0].id, sha256hex(key));
    const dump = JSON.stringify(rows);
    assert.ok(!dump.includes(key), 'raw key not stored');
    const account = (await world.app.account({ sub: 'user-alice' }))!;
    assert.equal(rows[0].account_id, account.id);
    const [grant] = world.providers.identity.grants();
    assert.ok(!dump.includes(grant.refreshToken!), 'no refresh token in the session');
    assert.ok(!/access_?token|refresh_?token/i.test(Object.keys(rows[0].data).join(',')));
  });
});

describe('GET /auth/session', () => {
  it('signed out: {authenticated:false, csrfToken}; signed in: {authenticated:true, csrfToken, email}, stable within the session', async () => {
    const world = await freshWorld(sessionWorld);
    const browser = world.app.browser();
    const out = await sessionOf(browser);
    assert.deepEqual(Object.keys(out).sort(), ['authenticated', 'csrfToken']);
    assert.equal(out.authenticated, false);
    assert.ok(out.csrfToken.length >= 16);
    assert.equal(browser.cookies.size, 0, 'asking creates no session cookie');
    assert.equal((await world.sql('select 1 from sessions')).length, 0, 'and no session row');

    await signIn(browser);
    const a = await sessionOf(browser);
    assert.deepEqual(Object.keys(a).sort(), ['authenticated', 'csrfToken', 'email']);
    assert.equal(a.authenticated, true);
    assert.equal(a.email, 'alice@example.com');
    assert.equal((await sessionOf(browser)).csrfToken, a.csrfToken, 'same token for the same session');

    const other = world.app.browser();
    await signIn(other);
    assert.notEqual((await sessionOf(other)).csrfToken, a.csrfToken, 'each session has its own token');

    const viaTrpc = await (await browser.fetch('/trpc/auth.session')).json();
    assert.deepEqual(viaTrpc.result.data, a, '/trpc auth.session answers the same');
  });

  it('an idle-expired session row no longer authenticates', async () => {
    const world = await freshWorld(sessionWorld);
    const browser = world.app.browser();
    await signIn(browser);
    await world.sql(`update sessions set expires_at = now() - interval '1 second'`);
    assert.equal((await sessionOf(browser)).authenticated, false);
  });

  it('a session past its absolute lifetime (30 days after sign-in) no longer authenticates', async () => {
    const world = await freshWorld(sessionWorld);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const longAgo = Date.now() - 31 * 24 * 3600 * 1000;
    await world.sql(`update sessions set data = jsonb_set(data, '{signedInAt}', to_jsonb($1::bigint))`, [longAgo]);
    const res = await browser.fetch('/auth/provider/disconnect', {
      method: 'POST',
      headers: csrfHeaders(csrfToken, WEB_ORIGIN),
    });
    await expectEnvelope(res, 'AUTH_REQUIRED', 401);
    assert.equal((await sessionOf(browser)).authenticated, false);
    assert.equal((await world.sql('select 1 from credentials')).length, 1, 'nothing was disconnected');
  });
});

describe('POST /auth/logout', () => {
  it('204 without a session, needing neither CSRF token nor Origin', async () => {
    const world = await freshWorld(sessionWorld);
    const anonymous = new Browser(world.app.url);
    const res = await anonymous.fetch('/auth/logout', { method: 'POST' });
    assert.equal(res.status, 204);
    assert.equal(await res.text(), '');
  });

  it('destroys the server-side session: 204, cookie cleared, the old cookie no longer authenticates, the row is gone', async () => {
    const world = await freshWorld(sessionWorld);
    const browser = world.app.browser();
    await signIn(browser);
    const copy = world.app.browser();
    copyCookies(browser, copy);
    const key = browser.cookies.get(SESSION_COOKIE)!;
    assert.equal((await world.sql('select 1 from sessions where id = $1', [sha256hex(key)])).length, 1);

    const res = await browser.fetch('/auth/logout', {
      method: 'POST',
      headers: { Origin: 'https://elsewhere.example' },
    });
    assert.equal(res.status, 204);
    const cleared = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=;`));
    assert.ok(cleared && /expires=Thu, 01 Jan 1970/i.test(cleared), 'cookie cleared');
    assert.equal(browser.cookies.has(SESSION_COOKIE), false);
    assert.equal((await sessionOf(copy)).authenticated, false, 'the old cookie is dead');
    assert.equal((await world.sql('select 1 from sessions where id = $1', [sha256hex(key)])).length, 0, 'row deleted');
    // Logout ends this session only; the account and its credentials stay.
    assert.equal((await world.sql('select 1 from credentials')).length, 1);
  });

  it('through /trpc (auth.logout) as well', async () => {
    const world = await freshWorld(sessionWorld);
    const browser = world.app.browser();
    await signIn(browser);
    const copy = world.app.browser();
    copyCookies(browser, copy);
    const res = await browser.fetch('/trpc/auth.logout', { method: 'POST', headers: JSON_TYPE });
    assert.equal(res.status, 200);
    assert.equal((await sessionOf(copy)).authenticated, false);
    assert.equal((await world.sql('select 1 from sessions')).length, 0);
    // Without a session too.
    const anon = await new Browser(world.app.url).fetch('/trpc/auth.logout', { method: 'POST', headers: JSON_TYPE });
    assert.equal(anon.status, 200);
  });

  it('after logout, an authenticated route answers AUTH_REQUIRED (REST and /trpc)', async () => {
    const world = await freshWorld(sessionWorld);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const copy = world.app.browser();
    copyCookies(browser, copy);
    await browser.fetch('/auth/logout', { method: 'POST' });
    await expectEnvelope(
      await copy.fetch('/auth/provider/disconnect', { method: 'POST', headers: csrfHeaders(csrfToken, WEB_ORIGIN) }),
      'AUTH_REQUIRED',
      401,
    );
    await expectTrpcError(
      await copy.fetch('/trpc/auth.disconnect', {
        method: 'POST',
        headers: { ...csrfHeaders(csrfToken, WEB_ORIGIN), ...JSON_TYPE },
      }),
      'AUTH_REQUIRED',
      401,
    );
  });
});
