/**
 * The OAuth 2.0 code flow with PKCE (api-spec part 4 "Authentication routes" and part 5,
 * runtime-contract part 3): the consent redirect, the callback's success path, and every
 * failure ending in the error=oauth_failed redirect, logged with the request id.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildTestApp, WEB_ORIGIN } from '../../helpers/app.ts';
import { signIn } from '../../helpers/providers.ts';
import {
  accountBySub,
  assertOAuthFailed,
  authWorld,
  callback,
  consent,
  CONNECTED_URL,
  expectEnvelope,
  PREAUTH_COOKIE,
  freshWorld,
  sessionOf,
  sha256hex,
  sharedAuthWorld,
  type AuthWorld,
} from './auth-fixtures.ts';

const MAIL_SCOPE = 'https://www.googleapis.com/auth/gmail.readonly';
const CONSENT_PARAMS = [
  'access_type',
  'client_id',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'redirect_uri',
  'response_type',
  'scope',
  'state',
];

/** The warn line the callback writes on failure, for the response's request id. */
function failureLog(world: AuthWorld, res: Response) {
  const requestId = res.headers.get('x-request-id');
  assert.ok(requestId, 'the response names its request id');
  const line = world.app.logs.find((l) => l.msg === 'oauth callback failed' && l.requestId === requestId);
  assert.ok(line, `a failure log line carries requestId ${requestId}`);
  return line as Record<string, unknown>;
}

async function countRows(world: AuthWorld, table: string): Promise<number> {
  const [row] = await world.sql<{ n: string }>(`select count(*) as n from ${table}`);
  return Number(row.n);
}

/** Common checks of a failed callback: redirect, logged with the request id, no session, nothing stored. */
async function assertFailedCallback(
  world: AuthWorld,
  res: Response,
  browser: ReturnType<AuthWorld['app']['browser']>,
  why: string,
  reason: RegExp,
) {
  assertOAuthFailed(res, why);
  const line = failureLog(world, res);
  assert.match(String(line.reason), reason, `${why}: logged reason`);
  assert.equal((await sessionOf(browser)).authenticated, false, `${why}: no session`);
  assert.equal(await countRows(world, 'accounts'), 0, `${why}: no account`);
  assert.equal(await countRows(world, 'credentials'), 0, `${why}: no credentials`);
}

describe('GET /auth/provider (consent redirect)', () => {
  const consentWorld = sharedAuthWorld();

  it('answers 302 to GOOGLE_AUTH_URL with exactly the contract parameters, PKCE S256 and a fresh state', async () => {
    const world = await freshWorld(consentWorld);
    const { identity } = world.providers;
    const browser = world.app.browser();
    const res = await browser.fetch('/auth/provider');
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const location = new URL(res.headers.get('location')!);
    assert.equal(location.origin + location.pathname, identity.authUrl);
    assert.deepEqual([...location.searchParams.keys()].sort(), CONSENT_PARAMS);
    const q = Object.fromEntries(location.searchParams);
    assert.equal(q.response_type, 'code');
    assert.equal(q.client_id, identity.clientId);
    assert.equal(q.redirect_uri, `${world.app.config.publicBaseUrl}/auth/provider/callback`);
    assert.equal(q.scope, `openid email ${MAIL_SCOPE}`);
    assert.equal(q.access_type, 'offline');
    assert.equal(q.prompt, 'consent');
    assert.equal(q.code_challenge_method, 'S256');
    assert.match(q.code_challenge, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(q.state.length >= 32, 'state has enough entropy');

    // Stored server-side, hashed, for 10 minutes by default; the raw state is nowhere in the table.
    const rows = await world.sql<{ id: string; lifetime: number }>(
      'select id, extract(epoch from expires_at - created_at)::float as lifetime from oauth_states',
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0].id, sha256hex(q.state));
    assert.ok(Math.abs(rows[0].lifetime - 600) < 1, `state lifetime is 600 s (got ${rows[0].lifetime})`);
    const dump = JSON.stringify(await world.sql('select * from oauth_states'));
    assert.ok(!dump.includes(q.state), 'raw state not stored');
    assert.ok(!dump.includes(q.code_challenge), 'challenge not stored (the verifier is)');

    // A pre-auth cookie binds the state to this browser.
    const preauth = res.headers.getSetCookie().find((c) => c.startsWith(`${PREAUTH_COOKIE}=`));
    assert.ok(preauth, 'pre-auth cookie set');
    assert.match(preauth, /;\s*httponly/i);
    assert.match(preauth, /;\s*samesite=lax/i);
    assert.ok(
      res.headers.getSetCookie().some((c) => c.startsWith(`${PREAUTH_COOKIE}.sig=`)),
      'pre-auth cookie signed',
    );

    const second = new URL((await world.app.browser().fetch('/auth/provider')).headers.get('location')!);
    assert.notEqual(second.searchParams.get('state'), q.state, 'a new state per flow');
    assert.notEqual(second.searchParams.get('code_challenge'), q.code_challenge, 'a new verifier per flow');
  });

  it('redeems the code with the PKCE verifier matching the challenge, and client authentication', async () => {
    const world = await freshWorld(consentWorld);
    const { identity } = world.providers;
    const browser = world.app.browser();
    const { authorizeUrl, callback: cb } = await consent(browser);
    const res = await callback(browser, cb);
    assert.equal(res.headers.get('location'), CONNECTED_URL);
    const exchange = identity.calls.tokenRequests.find((r) => r.grant_type === 'authorization_code');
    assert.ok(exchange, 'an authorization_code grant was requested');
    assert.equal(exchange.code, new URL(cb, world.app.url).searchParams.get('code'));
    assert.equal(exchange.redirect_uri, authorizeUrl.searchParams.get('redirect_uri'));
    assert.equal(
      createHash('sha256').update(exchange.code_verifier).digest('base64url'),
      authorizeUrl.searchParams.get('code_challenge'),
    );
    // Client authentication went in the form or as HTTP Basic (the stand-in refuses anything else and the flow succeeded).
    assert.equal(identity.calls.tokenRequests.length, 1);
  });

  it('never lets a query parameter move the Location off GOOGLE_AUTH_URL', async () => {
    const world = await freshWorld(consentWorld);
    const evil = encodeURIComponent('https://evil.example/steal');
    const res = await world.app
      .browser()
      .fetch(`/auth/provider?redirect=${evil}&next=${evil}&return_to=${evil}&redirect_uri=${evil}`);
    assert.equal(res.status, 302);
    const location = new URL(res.headers.get('location')!);
    assert.equal(location.origin, new URL(world.providers.identity.authUrl).origin);
    assert.equal(location.searchParams.get('redirect_uri'), `${world.app.config.publicBaseUrl}/auth/provider/callback`);
    assert.ok(!res.headers.get('location')!.includes('evil.example'));
  });

  it('answers SERVICE_UNAVAILABLE 503 (envelope, Retry-After) on both legs when OAuth is not configured', async (t) => {
    const app = await buildTestApp(t);
    for (const path of ['/auth/provider', '/auth/provider/callback?code=x&state=y']) {
      const res = await app.browser().fetch(path);
      await expectEnvelope(res, 'SERVICE_UNAVAILABLE', 503);
      assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/, `${path}: Retry-After`);
    }
  });

  it('counts OAuth as configured only when both client id and secret are set', async (t) => {
    const app = await buildTestApp(t, { env: { GOOGLE_CLIENT_ID: 'only-the-id' } });
    await expectEnvelope(await app.browser().fetch('/auth/provider'), 'SERVICE_UNAVAILABLE', 503);
  });
});

describe('GET /auth/provider/callback: success', () => {
  it('exchanges the code, keys the account by sub, stores credentials, starts a session and redirects with connected=1', async (t) => {
    const registered: string[] = [];
    const world = await authWorld(
      t,
      {},
      { mailWatch: () => ({ register: async (id) => void registered.push(id), stop: async () => {} }) },
    );
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    const res = await callback(browser, cb);
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('location'), CONNECTED_URL);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const cleared = res.headers.getSetCookie().find((c) => c.startsWith(`${PREAUTH_COOKIE}=;`));
    assert.ok(cleared && /expires=Thu, 01 Jan 1970/i.test(cleared), 'pre-auth cookie cleared');

    const session = await sessionOf(browser);
    assert.equal(session.authenticated, true);
    assert.equal(session.email, 'alice@example.com');
    assert.ok(session.csrfToken.length >= 16);

    const account = await accountBySub(world, 'user-alice');
    assert.ok(account, 'account keyed by sub');
    assert.equal(account.email, 'alice@example.com');
    assert.equal(account.needsReconnect, false);
    assert.equal((await world.sql('select 1 from credentials where account_id = $1', [account.id])).length, 1);
    assert.ok(await world.app.syncState(account.id), 'its sync state is stored');
    assert.equal((await world.sql('select 1 from oauth_states')).length, 0, 'the state is consumed');
    assert.deepEqual(registered, [account.id], 'the mail watch is registered for the account');
    assert.ok(world.app.logs.some((l) => l.msg === 'signed in' && l.requestId === res.headers.get('x-request-id')));
  });

  it('re-signing in updates the same account row with the new tokens (and a changed email)', async (t) => {
    const world = await authWorld(t);
    const { identity } = world.providers;
    const { tokenCrypto } = world.app.container;
    await signIn(world.app.browser());
    const first = await accountBySub(world, 'user-alice');
    const [cred1] = await world.sql<{ refresh_token_enc: string; access_token_enc: string; account_id: string }>(
      'select * from credentials',
    );
    const refresh1 = tokenCrypto.decrypt(cred1.refresh_token_enc, { accountId: cred1.account_id, field: 'refresh' });

    identity.setCurrentUser({ sub: 'user-alice', email: 'alice.new@example.com' });
    const browser2 = world.app.browser();
    const { email } = await signIn(browser2);
    assert.equal(email, 'alice.new@example.com');
    assert.equal(await world.app.accountCount(), 1, 'still one account');
    const account = await world.app.account({ sub: 'user-alice' });
    assert.equal(account?.id, first.id, 'same account row');
    assert.equal(account.email, 'alice.new@example.com');

    const creds = await world.sql<{ refresh_token_enc: string; access_token_enc: string; account_id: string }>(
      'select * from credentials',
    );
    assert.equal(creds.length, 1);
    const refresh2 = tokenCrypto.decrypt(creds[0].refresh_token_enc, {
      accountId: creds[0].account_id,
      field: 'refresh',
    });
    assert.notEqual(refresh2, refresh1, 'new refresh token stored');
    const newest = identity
      .grants('user-alice')
      .sort((a, b) => a.createdAt - b.createdAt)
      .at(-1)!;
    assert.equal(refresh2, newest.refreshToken, 'the stored refresh token is the one of the latest grant');
    assert.equal(
      identity.accessTokenOwner(
        tokenCrypto.decrypt(creds[0].access_token_enc, { accountId: creds[0].account_id, field: 'access' }),
      )?.sub,
      'user-alice',
      'the stored access token is live',
    );
  });

  it('a second user gets a separate account', async (t) => {
    const world = await authWorld(t);
    await signIn(world.app.browser());
    world.providers.identity.setCurrentUser({ sub: 'user-bob', email: 'bob@example.com' });
    const { email } = await signIn(world.app.browser());
    assert.equal(email, 'bob@example.com');
    assert.equal(await world.app.accountCount(), 2);
    assert.ok(await world.app.account({ sub: 'user-alice' }), 'alice kept her account');
    assert.ok(await world.app.account({ sub: 'user-bob' }), 'bob got his own');
  });

  it('ignores redirect / next / return_to on the callback and always redirects to WEB_ORIGIN', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    const evil = encodeURIComponent('https://evil.example/x');
    const res = await callback(browser, `${cb}&redirect=${evil}&next=${evil}&return_to=${evil}&redirect_uri=${evil}`);
    assert.equal(res.headers.get('location'), CONNECTED_URL);
    assert.equal(new URL(res.headers.get('location')!).origin, WEB_ORIGIN);

    // The failure redirect ignores them too.
    const failed = await callback(world.app.browser(), `/auth/provider/callback?state=nope&code=x&next=${evil}`);
    assertOAuthFailed(failed, 'unknown state with next=');
  });
});

describe('GET /auth/provider/callback: every failure is the error=oauth_failed redirect', () => {
  // Two worlds, the first for the state and browser checks up to 'a state is single use', the
  // second for the rest: 9 and 11 callback calls, under the callback's 20 a minute per client.
  const stateWorld = sharedAuthWorld();
  const exchangeWorld = sharedAuthWorld();

  it('provider error= parameter (consent denied)', async () => {
    const world = await freshWorld(stateWorld);
    world.providers.identity.denyNextConsent();
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    assert.match(cb, /error=access_denied/);
    const res = await callback(browser, cb);
    await assertFailedCallback(world, res, browser, 'provider error', /provider returned an error/);
    assert.equal(world.providers.identity.calls.tokenRequests.length, 0, 'no code exchange');
  });

  it('provider error without any state', async () => {
    const world = await freshWorld(stateWorld);
    const browser = world.app.browser();
    const res = await callback(browser, '/auth/provider/callback?error=access_denied');
    await assertFailedCallback(world, res, browser, 'error without state', /missing state/);
  });

  it('unknown state, missing state and a repeated state parameter', async () => {
    const world = await freshWorld(stateWorld);
    const browser = world.app.browser();
    const { callback: cb, state } = await consent(browser);
    const code = new URL(cb, world.app.url).searchParams.get('code')!;
    for (const [why, path, reason] of [
      [
        'unknown state',
        `/auth/provider/callback?code=${encodeURIComponent(code)}&state=not-a-state`,
        /unknown or reused/,
      ],
      ['missing state', `/auth/provider/callback?code=${encodeURIComponent(code)}`, /missing state/],
      [
        'repeated state',
        `/auth/provider/callback?code=${encodeURIComponent(code)}&state=${state}&state=${state}`,
        /missing state/,
      ],
    ] as const) {
      const res = await callback(browser, path);
      assertOAuthFailed(res, why);
      assert.match(String(failureLog(world, res).reason), reason, why);
    }
    assert.equal(world.providers.identity.calls.tokenRequests.length, 0, 'no code was redeemed');
    assert.equal((await sessionOf(browser)).authenticated, false);
  });

  it('a reused state fails, and the code is not redeemed twice', async () => {
    const world = await freshWorld(stateWorld);
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    // Keep the pre-auth cookie to replay the callback exactly as the browser first sent it.
    const preauth = new Map(browser.cookies);
    assert.equal((await callback(browser, cb)).headers.get('location'), CONNECTED_URL);
    const exchanges = world.providers.identity.calls.tokenRequests.length;

    const replay = world.app.browser();
    for (const [k, v] of preauth) replay.cookies.set(k, v);
    const res = await callback(replay, cb);
    assertOAuthFailed(res, 'reused state');
    assert.match(String(failureLog(world, res).reason), /unknown or reused/);
    assert.equal(world.providers.identity.calls.tokenRequests.length, exchanges, 'no second exchange');
    assert.equal((await sessionOf(replay)).authenticated, false);
  });

  it('a state is single use whatever the outcome: a failed presentation burns it for the right browser too', async () => {
    const world = await freshWorld(stateWorld);
    const owner = world.app.browser();
    const { callback: cb } = await consent(owner);
    const stranger = world.app.browser();
    assertOAuthFailed(await callback(stranger, cb), 'presented by a stranger');
    const res = await callback(owner, cb);
    await assertFailedCallback(world, res, owner, 'owner after the stranger', /unknown or reused/);
  });

  it('an expired state fails (OAUTH_STATE_TTL_SECONDS=1)', async (t) => {
    const world = await authWorld(t, { OAUTH_STATE_TTL_SECONDS: '1' });
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    const [row] = await world.sql<{ lifetime: number }>(
      'select extract(epoch from expires_at - created_at)::float as lifetime from oauth_states',
    );
    assert.ok(Math.abs(row.lifetime - 1) < 0.5, `configured lifetime used (got ${row.lifetime})`);
    await sleep(1_500);
    const res = await callback(browser, cb);
    await assertFailedCallback(world, res, browser, 'expired state', /expired state/);
    assert.equal(world.providers.identity.calls.tokenRequests.length, 0, 'no exchange for an expired state');
  });

  it('a state presented by another browser (no pre-auth cookie, or its own) fails', async () => {
    const world = await freshWorld(exchangeWorld);
    const alice = world.app.browser();
    const { callback: aliceCallback } = await consent(alice);
    const mallory = world.app.browser();
    await consent(mallory); // Mallory holds a pre-auth cookie of her own flow.
    const res = await callback(mallory, aliceCallback);
    await assertFailedCallback(world, res, mallory, 'other browser with its own cookie', /another browser/);

    const alice2 = world.app.browser();
    const { callback: cb2 } = await consent(alice2);
    const cookieless = world.app.browser();
    const res2 = await callback(cookieless, cb2);
    await assertFailedCallback(world, res2, cookieless, 'browser without pre-auth cookie', /another browser/);

    // A forged (unsigned) pre-auth cookie does not bind either.
    const alice3 = world.app.browser();
    const { callback: cb3 } = await consent(alice3);
    const forger = world.app.browser();
    forger.cookies.set(PREAUTH_COOKIE, alice3.cookies.get(PREAUTH_COOKIE)!);
    const res3 = await callback(forger, cb3);
    await assertFailedCallback(world, res3, forger, 'pre-auth cookie without signature', /another browser/);
  });

  it('a missing code fails', async () => {
    const world = await freshWorld(exchangeWorld);
    const browser = world.app.browser();
    const { state } = await consent(browser);
    const res = await callback(browser, `/auth/provider/callback?state=${encodeURIComponent(state)}`);
    await assertFailedCallback(world, res, browser, 'missing code', /missing code/);
  });

  it('a failed code exchange fails (provider 500, and a code the provider refuses)', async () => {
    const world = await freshWorld(exchangeWorld);
    const { identity } = world.providers;
    const browser = world.app.browser();
    identity.injectFault({ endpoint: 'token', status: 500 });
    const { callback: cb } = await consent(browser);
    const res = await callback(browser, cb);
    await assertFailedCallback(world, res, browser, 'token endpoint 500', /code exchange failed/);
    // One attempt: a code is single use and the callback is bounded by one provider timeout.
    assert.equal(identity.calls.tokenRequests.length, 1, 'the code exchange is not retried');

    const { state } = await consent(browser);
    const res2 = await callback(browser, `/auth/provider/callback?state=${encodeURIComponent(state)}&code=forged-code`);
    await assertFailedCallback(world, res2, browser, 'invalid_grant on exchange', /code exchange failed/);
    assert.ok(!JSON.stringify(world.app.logs).includes('forged-code'), 'the code is never logged');
  });

  it('a failed userinfo request fails', async () => {
    const world = await freshWorld(exchangeWorld);
    world.providers.identity.injectFault({ endpoint: 'userinfo', status: 500 });
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    const res = await callback(browser, cb);
    await assertFailedCallback(world, res, browser, 'userinfo 500', /userinfo failed/);
  });

  it('userinfo without an email (email scope not granted) fails', async () => {
    const world = await freshWorld(exchangeWorld);
    world.providers.identity.setGrantedScope(`openid ${MAIL_SCOPE}`);
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    const res = await callback(browser, cb);
    await assertFailedCallback(world, res, browser, 'no email', /userinfo failed/);
  });

  it('the mail scope not granted fails', async () => {
    const world = await freshWorld(exchangeWorld);
    world.providers.identity.setGrantedScope('openid email');
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    const res = await callback(browser, cb);
    await assertFailedCallback(world, res, browser, 'scope not granted', /mail scope not granted/);
    assert.equal(world.providers.identity.calls.userinfo, 0, 'no identity lookup without the scope');
  });

  it('failure log lines carry the request id but never the state, the code or the verifier', async () => {
    const world = await freshWorld(exchangeWorld);
    const { identity } = world.providers;
    const browser = world.app.browser();
    for (const endpoint of ['token', 'userinfo'] as const) {
      identity.injectFault({ endpoint, status: 500 });
      const { callback: cb, state } = await consent(browser);
      const res = await callback(browser, cb);
      assertOAuthFailed(res, `${endpoint} 500`);
      const line = failureLog(world, res);
      assert.equal(line.level, 'warn');
      const code = new URL(cb, world.app.url).searchParams.get('code')!;
      const all = JSON.stringify(world.app.logs);
      assert.ok(!all.includes(state), `${endpoint}: state not logged`);
      assert.ok(!all.includes(code), `${endpoint}: code not logged`);
      for (const r of identity.calls.tokenRequests)
        assert.ok(!all.includes(r.code_verifier), `${endpoint}: verifier not logged`);
    }
  });
});
