import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, randomBytes, verify as cryptoVerify, type JsonWebKey } from 'node:crypto';
import { startIdentityStandIn, type IdentityStandIn, type StandInUser } from '../../stand-ins/identity.stand-in.ts';

const REDIRECT_URI = 'http://127.0.0.1:9/auth/callback';
const FULL_SCOPE = 'openid email https://www.googleapis.com/auth/gmail.readonly';
const BOB: StandInUser = { sub: 'user-bob', email: 'bob@example.com', email_verified: false };

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function authorizeUrl(idp: IdentityStandIn, params: Record<string, string | undefined> = {}) {
  const defaults: Record<string, string> = {
    response_type: 'code',
    client_id: idp.clientId,
    redirect_uri: REDIRECT_URI,
    state: randomBytes(8).toString('hex'),
    access_type: 'offline',
    prompt: 'consent',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    scope: FULL_SCOPE,
  };
  const url = new URL(idp.authUrl);
  for (const [k, v] of Object.entries({ ...defaults, ...params })) if (v !== undefined) url.searchParams.set(k, v);
  return url;
}

/** Runs consent and returns the code plus everything needed to redeem it. */
async function consent(idp: IdentityStandIn, params: Record<string, string | undefined> = {}) {
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const res = await fetch(authorizeUrl(idp, { state, code_challenge: challenge, ...params }), { redirect: 'manual' });
  assert.equal(res.status, 302);
  const location = new URL(res.headers.get('location')!);
  const code = location.searchParams.get('code');
  assert.ok(code, `expected a code in ${location.href}`);
  return { code, verifier, state, location };
}

function tokenRequest(
  idp: IdentityStandIn,
  form: Record<string, string>,
  auth: 'form' | 'basic' | 'none' = 'form',
  signal?: AbortSignal,
) {
  const body = new URLSearchParams(form);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (auth === 'form') {
    body.set('client_id', idp.clientId);
    body.set('client_secret', idp.clientSecret);
  } else if (auth === 'basic') {
    const enc = (s: string) => encodeURIComponent(s);
    headers['authorization'] =
      `Basic ${Buffer.from(`${enc(idp.clientId)}:${enc(idp.clientSecret)}`).toString('base64')}`;
  }
  return fetch(idp.tokenUrl, { method: 'POST', headers, body, ...(signal ? { signal } : {}) });
}

function exchange(
  idp: IdentityStandIn,
  code: string,
  verifier: string,
  extra: Record<string, string> = {},
  auth: 'form' | 'basic' = 'form',
) {
  return tokenRequest(
    idp,
    { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier, ...extra },
    auth,
  );
}

/** Full sign-in: consent + exchange; returns the token response body. */
async function signIn(idp: IdentityStandIn, params: Record<string, string | undefined> = {}) {
  const { code, verifier } = await consent(idp, params);
  const res = await exchange(idp, code, verifier);
  assert.equal(res.status, 200);
  return (await res.json()) as {
    access_token: string;
    refresh_token?: string;
    expires_in: number;
    scope: string;
    token_type: string;
    id_token?: string;
  };
}

const refreshRequest = (idp: IdentityStandIn, refreshToken: string) =>
  tokenRequest(idp, { grant_type: 'refresh_token', refresh_token: refreshToken });

const userinfo = (idp: IdentityStandIn, token: string) =>
  fetch(idp.userinfoUrl, { headers: { authorization: `Bearer ${token}` } });

const revoke = (idp: IdentityStandIn, token: string, via: 'form' | 'query' = 'form') =>
  via === 'form'
    ? fetch(idp.revokeUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }),
      })
    : fetch(`${idp.revokeUrl}?token=${encodeURIComponent(token)}`, { method: 'POST' });

describe('identity stand-in', () => {
  let idp: IdentityStandIn;

  before(async () => {
    idp = await startIdentityStandIn({
      users: [{ sub: 'user-alice', email: 'alice@example.com', email_verified: true }, BOB],
    });
  });
  after(async () => {
    await idp.close();
  });
  beforeEach(() => {
    idp.setCurrentUser('user-alice');
    idp.setGrantedScope(null);
    idp.denyNextConsent(0);
    idp.clearFaults();
    idp.resetCounters();
  });

  describe('consent', () => {
    it('redirects to redirect_uri with a fresh random code, the state, and records the request', async () => {
      const a = await consent(idp);
      const b = await consent(idp);
      assert.equal(a.location.origin + a.location.pathname, REDIRECT_URI);
      assert.equal(a.location.searchParams.get('state'), a.state);
      assert.equal(a.location.searchParams.get('error'), null);
      assert.notEqual(a.code, b.code);
      assert.ok(a.code.length >= 43, `code too short: ${a.code}`);
      assert.equal(idp.calls.authorize, 2);
      assert.equal(idp.authorizeRequests.length, 2);
      const recorded = idp.authorizeRequests[0]!;
      assert.equal(recorded['scope'], FULL_SCOPE);
      assert.equal(recorded['code_challenge_method'], 'S256');
      assert.equal(recorded['access_type'], 'offline');
      assert.equal(recorded['state'], a.state);
    });

    it('keeps query parameters already present in redirect_uri', async () => {
      const { location } = await consent(idp, { redirect_uri: `${REDIRECT_URI}?tenant=t1` });
      assert.equal(location.searchParams.get('tenant'), 't1');
      assert.ok(location.searchParams.get('code'));
    });

    for (const [name, params] of [
      ['unknown client_id', { client_id: 'someone-else' }],
      ['missing client_id', { client_id: undefined }],
      ['missing code_challenge', { code_challenge: undefined }],
      ['missing code_challenge_method', { code_challenge_method: undefined }],
      ['plain code_challenge_method', { code_challenge_method: 'plain' }],
      ['missing redirect_uri', { redirect_uri: undefined }],
    ] as const) {
      it(`answers a 400 page for ${name}`, async () => {
        const res = await fetch(authorizeUrl(idp, params), { redirect: 'manual' });
        assert.equal(res.status, 400);
        assert.equal(res.headers.get('location'), null);
        assert.match(res.headers.get('content-type') ?? '', /text\/html/);
        assert.match(await res.text(), /Error 400/);
        assert.equal(idp.authorizeRequests.length, 1, 'rejected requests are recorded too');
      });
    }

    it('denies the next consents when asked, then consents again', async () => {
      idp.denyNextConsent(2);
      for (let i = 0; i < 2; i++) {
        const state = `s${i}`;
        const res = await fetch(authorizeUrl(idp, { state }), { redirect: 'manual' });
        assert.equal(res.status, 302);
        const loc = new URL(res.headers.get('location')!);
        assert.equal(loc.origin + loc.pathname, REDIRECT_URI);
        assert.equal(loc.searchParams.get('error'), 'access_denied');
        assert.equal(loc.searchParams.get('state'), state);
        assert.equal(loc.searchParams.get('code'), null);
      }
      const { code } = await consent(idp);
      assert.ok(code);
    });

    it('an invalid request does not use up a pending denial', async () => {
      idp.denyNextConsent();
      const bad = await fetch(authorizeUrl(idp, { client_id: 'nope' }), { redirect: 'manual' });
      assert.equal(bad.status, 400);
      const res = await fetch(authorizeUrl(idp), { redirect: 'manual' });
      assert.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'access_denied');
    });
  });

  describe('token: authorization_code', () => {
    it('exchanges a code with the right PKCE verifier (client auth in the form)', async () => {
      const { code, verifier } = await consent(idp);
      const res = await exchange(idp, code, verifier);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const body = await res.json();
      assert.equal(body.token_type, 'Bearer');
      assert.equal(body.expires_in, 3599);
      assert.equal(body.scope, FULL_SCOPE);
      assert.equal(typeof body.access_token, 'string');
      assert.equal(typeof body.refresh_token, 'string');
      assert.notEqual(body.access_token, body.refresh_token);
      assert.deepEqual(idp.accessTokenOwner(body.access_token), {
        sub: 'user-alice',
        email: 'alice@example.com',
        email_verified: true,
      });

      assert.equal(idp.calls.token, 1);
      const sent = idp.calls.tokenRequests[0]!;
      assert.equal(sent['grant_type'], 'authorization_code');
      assert.equal(sent['code_verifier'], verifier);
      assert.equal(sent['redirect_uri'], REDIRECT_URI);
      assert.equal(sent['code'], code);
    });

    it('exchanges a code with HTTP Basic client auth', async () => {
      const { code, verifier } = await consent(idp);
      const res = await exchange(idp, code, verifier, {}, 'basic');
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.ok(idp.accessTokenOwner(body.access_token));
      assert.equal(idp.calls.tokenRequests[0]!['client_secret'], undefined);
    });

    it('issues an RS256 id_token for the openid scope, verifiable with the JWKS', async () => {
      const body = await signIn(idp);
      assert.ok(body.id_token);
      const [h, p, s] = body.id_token.split('.') as [string, string, string];
      const header = JSON.parse(Buffer.from(h, 'base64url').toString());
      const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
      assert.equal(header.alg, 'RS256');
      assert.equal(payload.sub, 'user-alice');
      assert.equal(payload.email, 'alice@example.com');
      assert.equal(payload.aud, idp.clientId);
      assert.equal(payload.iss, idp.url);
      const { keys } = (await (await fetch(idp.jwksUrl)).json()) as { keys: (JsonWebKey & { kid: string })[] };
      const jwk = keys.find((k) => k.kid === header.kid);
      assert.ok(jwk, 'signing key is published');
      const ok = cryptoVerify(
        'sha256',
        Buffer.from(`${h}.${p}`),
        createPublicKey({ key: jwk, format: 'jwk' }),
        Buffer.from(s, 'base64url'),
      );
      assert.equal(ok, true);
      const tampered = Buffer.from(JSON.stringify({ ...payload, sub: 'mallory' })).toString('base64url');
      assert.equal(
        cryptoVerify(
          'sha256',
          Buffer.from(`${h}.${tampered}`),
          createPublicKey({ key: jwk, format: 'jwk' }),
          Buffer.from(s, 'base64url'),
        ),
        false,
      );
    });

    it('omits id_token without the openid scope', async () => {
      const body = await signIn(idp, { scope: 'email https://www.googleapis.com/auth/gmail.readonly' });
      assert.equal(body.id_token, undefined);
    });

    it('rejects a wrong client secret / unknown client / no credentials with 401 invalid_client', async () => {
      const { code, verifier } = await consent(idp);
      const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier };
      const wrongSecret = await tokenRequest(idp, { ...form, client_id: idp.clientId, client_secret: 'wrong' }, 'none');
      assert.equal(wrongSecret.status, 401);
      assert.equal((await wrongSecret.json()).error, 'invalid_client');
      const wrongBasic = await fetch(idp.tokenUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${idp.clientId}:nope`).toString('base64')}`,
        },
        body: new URLSearchParams(form),
      });
      assert.equal(wrongBasic.status, 401);
      assert.equal((await wrongBasic.json()).error, 'invalid_client');
      const unknown = await tokenRequest(idp, { ...form, client_id: 'other', client_secret: idp.clientSecret }, 'none');
      assert.equal(unknown.status, 401);
      assert.equal((await unknown.json()).error, 'invalid_client');
      const none = await tokenRequest(idp, form, 'none');
      assert.equal(none.status, 401);
      assert.equal((await none.json()).error, 'invalid_client');
      // The code was not consumed by failed client authentication.
      assert.equal((await exchange(idp, code, verifier)).status, 200);
    });

    it('rejects a wrong code_verifier with invalid_grant (and the right one still works)', async () => {
      const { code, verifier } = await consent(idp);
      const wrong = await exchange(idp, code, pkce().verifier);
      assert.equal(wrong.status, 400);
      assert.equal((await wrong.json()).error, 'invalid_grant');
      const missing = await tokenRequest(idp, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
      assert.equal(missing.status, 400);
      assert.equal((await missing.json()).error, 'invalid_grant');
      assert.equal((await exchange(idp, code, verifier)).status, 200);
    });

    it('codes are single use', async () => {
      const { code, verifier } = await consent(idp);
      assert.equal((await exchange(idp, code, verifier)).status, 200);
      const again = await exchange(idp, code, verifier);
      assert.equal(again.status, 400);
      assert.equal((await again.json()).error, 'invalid_grant');
    });

    it('codes are bound to the redirect_uri', async () => {
      const { code, verifier } = await consent(idp);
      const res = await exchange(idp, code, verifier, { redirect_uri: 'http://127.0.0.1:9/evil' });
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error, 'invalid_grant');
    });

    it('rejects an unknown code with invalid_grant', async () => {
      const res = await exchange(idp, `4/0${randomBytes(32).toString('base64url')}`, pkce().verifier);
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error, 'invalid_grant');
    });

    it('rejects a code older than 60 s', async () => {
      let clock = Date.now();
      const timed = await startIdentityStandIn({ now: () => clock });
      try {
        const fresh = await consent(timed);
        const stale = await consent(timed);
        clock += 59_000;
        assert.equal((await exchange(timed, fresh.code, fresh.verifier)).status, 200);
        clock += 2_000;
        const res = await exchange(timed, stale.code, stale.verifier);
        assert.equal(res.status, 400);
        assert.equal((await res.json()).error, 'invalid_grant');
      } finally {
        await timed.close();
      }
    });

    it('answers unsupported_grant_type and invalid_request for malformed requests', async () => {
      const res = await tokenRequest(idp, { grant_type: 'password', username: 'a', password: 'b' });
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error, 'unsupported_grant_type');
      const json = await fetch(idp.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'refresh_token', client_id: idp.clientId, client_secret: idp.clientSecret }),
      });
      assert.equal(json.status, 400);
      assert.equal((await json.json()).error, 'invalid_request');
    });

    it('returns a refresh token only with access_type=offline, and on re-consent only with prompt=consent', async () => {
      idp.setCurrentUser({ sub: 'user-carol', email: 'carol@example.com' });
      const online = await signIn(idp, { access_type: undefined });
      assert.equal(online.refresh_token, undefined);
      const first = await signIn(idp, { prompt: undefined });
      assert.equal(typeof first.refresh_token, 'string');
      const second = await signIn(idp, { prompt: undefined });
      assert.equal(second.refresh_token, undefined, 'no new refresh token without prompt=consent');
      const forced = await signIn(idp);
      assert.equal(typeof forced.refresh_token, 'string');
      assert.notEqual(forced.refresh_token, first.refresh_token);
      idp.revokeUser('user-carol');
    });
  });

  describe('token: refresh_token and revocation', () => {
    it('refreshes, and answers invalid_grant once the refresh token is revoked', async () => {
      const first = await signIn(idp);
      const res = await refreshRequest(idp, first.refresh_token!);
      assert.equal(res.status, 200);
      const refreshed = await res.json();
      assert.equal(refreshed.token_type, 'Bearer');
      assert.equal(refreshed.expires_in, 3599);
      assert.equal(refreshed.scope, FULL_SCOPE);
      assert.equal(refreshed.refresh_token, undefined);
      assert.notEqual(refreshed.access_token, first.access_token);
      assert.equal((await userinfo(idp, refreshed.access_token)).status, 200);
      assert.equal(idp.calls.tokenRequests.at(-1)!['grant_type'], 'refresh_token');

      const revoked = await revoke(idp, first.refresh_token!);
      assert.equal(revoked.status, 200);
      const after = await refreshRequest(idp, first.refresh_token!);
      assert.equal(after.status, 400);
      assert.deepEqual(await after.json(), {
        error: 'invalid_grant',
        error_description: 'Token has been expired or revoked.',
      });
      // The whole grant is gone: every access token of it too.
      assert.equal((await userinfo(idp, first.access_token)).status, 401);
      assert.equal((await userinfo(idp, refreshed.access_token)).status, 401);
      assert.equal(idp.accessTokenOwner(refreshed.access_token), null);
      assert.equal(
        idp.grants().some((g) => g.refreshToken === first.refresh_token),
        false,
      );
      // Revoking again: the token is no longer known.
      const twice = await revoke(idp, first.refresh_token!);
      assert.equal(twice.status, 400);
      assert.equal((await twice.json()).error, 'invalid_token');
      assert.equal(idp.calls.revoke, 2);
    });

    it('revoking by access token (query parameter) revokes the refresh token too', async () => {
      const t = await signIn(idp);
      assert.equal(idp.grants('user-alice').filter((g) => g.refreshToken === t.refresh_token).length, 1);
      const res = await revoke(idp, t.access_token, 'query');
      assert.equal(res.status, 200);
      assert.equal((await refreshRequest(idp, t.refresh_token!)).status, 400);
      assert.equal(idp.grants('user-alice').filter((g) => g.refreshToken === t.refresh_token).length, 0);
    });

    it('revoking an unknown token answers 400 invalid_token', async () => {
      const res = await revoke(idp, 'not-a-token');
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error, 'invalid_token');
    });

    it('an unknown refresh token answers invalid_grant', async () => {
      const res = await refreshRequest(idp, `1//0${randomBytes(32).toString('base64url')}`);
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error, 'invalid_grant');
    });

    it('revokeUser revokes every grant of that user only', async () => {
      const a1 = await signIn(idp);
      const a2 = await signIn(idp);
      idp.setCurrentUser('bob@example.com');
      const b = await signIn(idp);
      assert.equal(idp.grants('user-alice').length >= 2, true);
      assert.equal(idp.revokeUser('user-alice') >= 2, true);
      assert.deepEqual(idp.grants('user-alice'), []);
      for (const t of [a1, a2]) {
        const res = await refreshRequest(idp, t.refresh_token!);
        assert.equal(res.status, 400);
        assert.equal((await res.json()).error, 'invalid_grant');
      }
      assert.equal((await refreshRequest(idp, b.refresh_token!)).status, 200);
      assert.equal(idp.grants('user-bob').length, 1);
      idp.revokeUser('user-bob');
    });

    it('grants() describes live grants', async () => {
      idp.revokeUser('user-alice');
      const t = await signIn(idp);
      const [g, ...rest] = idp.grants('user-alice');
      assert.equal(rest.length, 0);
      assert.equal(g!.sub, 'user-alice');
      assert.equal(g!.email, 'alice@example.com');
      assert.equal(g!.clientId, idp.clientId);
      assert.equal(g!.scope, FULL_SCOPE);
      assert.equal(g!.refreshToken, t.refresh_token);
      assert.equal(g!.liveAccessTokens, 1);
      idp.expireAccessTokens();
      assert.equal(idp.grants('user-alice')[0]!.liveAccessTokens, 0);
    });
  });

  describe('userinfo and access tokens', () => {
    it('answers sub/email/email_verified for a valid token, 401 otherwise', async () => {
      const t = await signIn(idp);
      const ok = await userinfo(idp, t.access_token);
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { sub: 'user-alice', email: 'alice@example.com', email_verified: true });
      assert.equal((await userinfo(idp, 'ya29.garbage')).status, 401);
      const noHeader = await fetch(idp.userinfoUrl);
      assert.equal(noHeader.status, 401);
      assert.equal(noHeader.headers.get('www-authenticate'), 'Bearer');
      // A refresh token is not an access token.
      assert.equal((await userinfo(idp, t.refresh_token!)).status, 401);
      assert.equal(idp.calls.userinfo, 4);
    });

    it('reports the current user at consent time', async () => {
      idp.setCurrentUser(BOB);
      const t = await signIn(idp);
      assert.deepEqual(await (await userinfo(idp, t.access_token)).json(), {
        sub: 'user-bob',
        email: 'bob@example.com',
        email_verified: false,
      });
      assert.equal(idp.accessTokenOwner(t.access_token)?.email, 'bob@example.com');
      idp.setCurrentUser('user-alice');
      assert.equal(
        idp.accessTokenOwner(t.access_token)?.email,
        'bob@example.com',
        'switching user later does not change issued tokens',
      );
      assert.throws(() => idp.setCurrentUser('nobody@example.com'), /unknown user/);
    });

    it('expireAccessTokens makes every current access token fail; refresh still works', async () => {
      const t = await signIn(idp);
      assert.ok(idp.accessTokenOwner(t.access_token));
      idp.expireAccessTokens();
      assert.equal(idp.accessTokenOwner(t.access_token), null);
      assert.equal((await userinfo(idp, t.access_token)).status, 401);
      const res = await refreshRequest(idp, t.refresh_token!);
      assert.equal(res.status, 200);
      const { access_token } = await res.json();
      assert.equal((await userinfo(idp, access_token)).status, 200);
      assert.equal(idp.accessTokenOwner(access_token)?.sub, 'user-alice');
    });

    it('access tokens expire after expires_in on the stand-in clock', async () => {
      let clock = Date.now();
      const timed = await startIdentityStandIn({ now: () => clock });
      try {
        const t = await signIn(timed);
        clock += 3598_000;
        assert.ok(timed.accessTokenOwner(t.access_token));
        clock += 2_000;
        assert.equal(timed.accessTokenOwner(t.access_token), null);
        assert.equal((await userinfo(timed, t.access_token)).status, 401);
      } finally {
        await timed.close();
      }
    });

    it('tokens are random, not predictable or repeated', async () => {
      const seen: string[] = [];
      for (let i = 0; i < 5; i++) {
        const t = await signIn(idp);
        seen.push(t.access_token, t.refresh_token!);
      }
      assert.equal(new Set(seen).size, seen.length);
      // Strip the fixed Google-like prefixes; what remains must be long and share no meaningful
      // prefix/suffix with any other token (a counter or timestamp would).
      const bodies = seen.map((tok) => tok.replace(/^(ya29\.|1\/\/0)/, ''));
      for (const b of bodies) assert.ok(b.length >= 43, `token too short: ${b}`);
      const common = (a: string, b: string) => {
        let n = 0;
        while (n < a.length && a[n] === b[n]) n++;
        return n;
      };
      const rev = (x: string) => [...x].reverse().join('');
      for (let i = 0; i < bodies.length; i++) {
        for (let j = i + 1; j < bodies.length; j++) {
          assert.ok(common(bodies[i]!, bodies[j]!) < 8, `shared prefix: ${bodies[i]} / ${bodies[j]}`);
          assert.ok(common(rev(bodies[i]!), rev(bodies[j]!)) < 8, `shared suffix: ${bodies[i]} / ${bodies[j]}`);
        }
      }
    });
  });

  describe('granted scope', () => {
    it('can grant less than requested, for the code exchange and the refresh', async () => {
      idp.setGrantedScope('openid email');
      const t = await signIn(idp);
      assert.equal(t.scope, 'openid email');
      assert.equal(idp.accessTokenInfo(t.access_token)?.scope, 'openid email');
      const refreshed = await (await refreshRequest(idp, t.refresh_token!)).json();
      assert.equal(refreshed.scope, 'openid email');
      idp.setGrantedScope(null);
      assert.equal((await signIn(idp)).scope, FULL_SCOPE);
    });

    it('userinfo omits email when the email scope was not granted', async () => {
      idp.setGrantedScope('openid');
      const t = await signIn(idp);
      assert.deepEqual(await (await userinfo(idp, t.access_token)).json(), { sub: 'user-alice' });
    });
  });

  describe('fault injection', () => {
    it('token: a garbage body with a status, for `times` requests, then normal again', async () => {
      const t = await signIn(idp);
      idp.resetCounters();
      idp.injectFault({ endpoint: 'token', status: 503, body: '<html>upstream broke', times: 2 });
      for (let i = 0; i < 2; i++) {
        const res = await refreshRequest(idp, t.refresh_token!);
        assert.equal(res.status, 503);
        const text = await res.text();
        assert.equal(text, '<html>upstream broke');
        assert.throws(() => JSON.parse(text));
      }
      assert.equal((await refreshRequest(idp, t.refresh_token!)).status, 200);
      assert.equal(idp.calls.token, 3);
      assert.equal(idp.calls.tokenRequests.length, 3, 'faulted requests are recorded');
      assert.equal(idp.calls.tokenRequests[0]!['refresh_token'], t.refresh_token);
    });

    it('token: default fault body is a JSON OAuth error', async () => {
      idp.injectFault({ endpoint: 'token', status: 500 });
      const res = await refreshRequest(idp, 'whatever');
      assert.equal(res.status, 500);
      assert.equal((await res.json()).error, 'server_error');
    });

    it('userinfo and revoke faults; a faulted revoke does not revoke', async () => {
      const t = await signIn(idp);
      idp.injectFault({ endpoint: 'userinfo', status: 500, body: 'oops' });
      const ui = await userinfo(idp, t.access_token);
      assert.equal(ui.status, 500);
      assert.equal(await ui.text(), 'oops');
      assert.equal((await userinfo(idp, t.access_token)).status, 200);

      idp.injectFault({ endpoint: 'revoke', status: 502, headers: { 'retry-after': '1' } });
      const rv = await revoke(idp, t.refresh_token!);
      assert.equal(rv.status, 502);
      assert.equal(rv.headers.get('retry-after'), '1');
      assert.equal((await refreshRequest(idp, t.refresh_token!)).status, 200, 'grant still alive');
      assert.equal((await revoke(idp, t.refresh_token!)).status, 200);
    });

    it('status 0 without hang drops the connection', async () => {
      idp.injectFault({ endpoint: 'userinfo', status: 0 });
      await assert.rejects(fetch(idp.userinfoUrl), TypeError);
      assert.equal((await fetch(idp.userinfoUrl)).status, 401);
    });

    it('hang: the request is never answered (client timeout), the next one is', async () => {
      idp.injectFault({ endpoint: 'token', status: 0, hang: true });
      const started = Date.now();
      await assert.rejects(
        tokenRequest(idp, { grant_type: 'refresh_token', refresh_token: 'x' }, 'form', AbortSignal.timeout(300)),
        {
          name: 'TimeoutError',
        },
      );
      assert.ok(Date.now() - started >= 250);
      const res = await tokenRequest(idp, { grant_type: 'refresh_token', refresh_token: 'x' });
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error, 'invalid_grant');
    });

    it('clearFaults drops pending faults', async () => {
      idp.injectFault({ endpoint: 'userinfo', status: 500, times: Infinity });
      assert.equal((await fetch(idp.userinfoUrl)).status, 500);
      assert.equal((await fetch(idp.userinfoUrl)).status, 500);
      idp.clearFaults();
      assert.equal((await fetch(idp.userinfoUrl)).status, 401);
    });

    it('rejects nonsense faults', () => {
      assert.throws(() => idp.injectFault({ endpoint: 'token', status: 42 }));
      assert.throws(() => idp.injectFault({ endpoint: 'token', status: 500, times: 0 }));
    });
  });

  it('resetCounters clears counters and recorded requests in place', async () => {
    await signIn(idp);
    const calls = idp.calls;
    assert.equal(calls.token, 1);
    idp.resetCounters();
    assert.equal(calls.authorize, 0);
    assert.equal(calls.token, 0);
    assert.equal(calls.tokenRequests.length, 0);
    assert.equal(idp.authorizeRequests.length, 0);
  });

  it('publishes an OpenID discovery document', async () => {
    const doc = await (await fetch(`${idp.url}/.well-known/openid-configuration`)).json();
    assert.equal(doc.authorization_endpoint, idp.authUrl);
    assert.equal(doc.token_endpoint, idp.tokenUrl);
    assert.equal(doc.userinfo_endpoint, idp.userinfoUrl);
    assert.equal(doc.revocation_endpoint, idp.revokeUrl);
    assert.deepEqual(doc.code_challenge_methods_supported, ['S256']);
  });
});

describe('identity stand-in: options and close()', () => {
  it('uses the given client credentials and first user', async () => {
    const idp = await startIdentityStandIn({ clientId: 'cid:with:colons', clientSecret: 's3cr%t', users: [BOB] });
    try {
      assert.equal(idp.clientId, 'cid:with:colons');
      assert.equal(idp.clientSecret, 's3cr%t');
      assert.deepEqual(idp.currentUser, BOB);
      const { code, verifier } = await consent(idp);
      const res = await exchange(idp, code, verifier, {}, 'basic');
      assert.equal(res.status, 200);
      assert.equal(idp.accessTokenOwner((await res.json()).access_token)?.sub, 'user-bob');
    } finally {
      await idp.close();
    }
  });

  it('defaults to test-client-id / test-client-secret and alice', async () => {
    const idp = await startIdentityStandIn();
    try {
      assert.equal(idp.clientId, 'test-client-id');
      assert.equal(idp.clientSecret, 'test-client-secret');
      assert.deepEqual(idp.currentUser, { sub: 'user-alice', email: 'alice@example.com', email_verified: true });
      assert.match(idp.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await idp.close();
    }
  });

  it('close() returns promptly with a hung request pending, and the server is gone', async () => {
    const idp = await startIdentityStandIn();
    idp.injectFault({ endpoint: 'token', status: 0, hang: true });
    const pending = tokenRequest(idp, { grant_type: 'refresh_token', refresh_token: 'x' });
    const settled = pending.then(
      () => 'answered',
      () => 'failed',
    );
    // Make sure the request reached the server before closing.
    while (idp.calls.token === 0) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      idp.close().then(() => 'closed'),
      new Promise<string>((r) => (timer = setTimeout(() => r('still open after 2 s'), 2000))),
    ]);
    clearTimeout(timer);
    assert.equal(outcome, 'closed');
    assert.ok(Date.now() - started < 1000, `close took ${Date.now() - started} ms`);
    assert.equal(await settled, 'failed');
    await assert.rejects(fetch(idp.tokenUrl, { method: 'POST' }));
    await idp.close(); // idempotent
  });
});
