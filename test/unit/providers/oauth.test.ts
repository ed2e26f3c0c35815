/**
 * The identity-provider client (runtime-contract part 3): the consent URL's exact parameters,
 * invalid_grant recognition, a code exchange and refresh made once (no library retries), and
 * revocation treating "already revoked" as done. Run against the identity stand-in.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { loadConfig } from '../../../server/infra/config.ts';
import { createOAuthProvider, isInvalidGrant, MAIL_SCOPE, SCOPES } from '../../../server/providers/oauth.ts';
import { startIdentityStandIn, type IdentityStandIn } from '../../../stand-ins/identity.stand-in.ts';
import { identityEnv } from '../../../stand-ins/stand-in-env.ts';

function providerFor(identity: IdentityStandIn) {
  const config = loadConfig({
    PUBLIC_BASE_URL: 'https://mail.example.test',
    ...identityEnv(identity),
  });
  return { config, oauth: createOAuthProvider(config) };
}

async function standIn(t: { after(fn: () => unknown): void }) {
  const identity = await startIdentityStandIn();
  t.after(() => identity.close());
  return identity;
}

/** Consent at the stand-in, returning a code for `verifier`. */
async function codeFor(
  identity: IdentityStandIn,
  oauth: ReturnType<typeof createOAuthProvider>,
  verifier: string,
): Promise<string> {
  const url = oauth.authorizationUrl({
    state: 's',
    codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
  });
  const res = await fetch(url, { redirect: 'manual' });
  return new URL(res.headers.get('location')!).searchParams.get('code')!;
}

describe('authorizationUrl', () => {
  it('carries exactly the contract parameters on GOOGLE_AUTH_URL', () => {
    const config = loadConfig({
      GOOGLE_CLIENT_ID: 'cid',
      GOOGLE_CLIENT_SECRET: 'sec',
      PUBLIC_BASE_URL: 'https://api.example.test',
      GOOGLE_AUTH_URL: 'https://idp.example.test/auth?x=1',
    });
    const url = new URL(createOAuthProvider(config).authorizationUrl({ state: 'st', codeChallenge: 'ch' }));
    assert.equal(url.origin + url.pathname, 'https://idp.example.test/auth');
    assert.deepEqual(Object.fromEntries(url.searchParams), {
      response_type: 'code',
      client_id: 'cid',
      redirect_uri: 'https://api.example.test/auth/provider/callback',
      scope: 'openid email https://www.googleapis.com/auth/gmail.readonly',
      state: 'st',
      access_type: 'offline',
      prompt: 'consent',
      code_challenge: 'ch',
      code_challenge_method: 'S256',
    });
    assert.deepEqual(SCOPES, ['openid', 'email', MAIL_SCOPE]);
    assert.ok(
      !SCOPES.some((s) => /gmail\.(modify|send|compose|insert)|mail\.google\.com/.test(s)),
      'no other mail scope',
    );
  });
});

describe('isInvalidGrant', () => {
  it('recognises the provider saying the grant is revoked or expired, and nothing else', () => {
    assert.equal(isInvalidGrant({ response: { data: { error: 'invalid_grant' } } }), true);
    assert.equal(isInvalidGrant(new Error('invalid_grant')), true);
    assert.equal(isInvalidGrant({ response: { data: { error: 'invalid_client' } } }), false);
    assert.equal(isInvalidGrant(new Error('request failed with status 500')), false);
    assert.equal(isInvalidGrant(null), false);
    assert.equal(isInvalidGrant(undefined), false);
    assert.equal(isInvalidGrant('invalid_grant'), false);
  });
});

describe('createOAuthProvider against the identity stand-in', () => {
  it('exchanges a code with the PKCE verifier, reads the identity, refreshes, and revokes', async (t) => {
    const identity = await standIn(t);
    const { oauth } = providerFor(identity);
    const verifier = randomBytes(32).toString('base64url');
    const tokens = await oauth.exchangeCode({ code: await codeFor(identity, oauth, verifier), codeVerifier: verifier });
    assert.ok(tokens.accessToken && tokens.refreshToken);
    assert.ok(tokens.scope.split(' ').includes(MAIL_SCOPE));
    assert.ok(tokens.expiresAt && tokens.expiresAt.getTime() > Date.now());
    assert.equal(identity.calls.tokenRequests[0].code_verifier, verifier);
    assert.deepEqual(await oauth.userinfo(tokens.accessToken), { sub: 'user-alice', email: 'alice@example.com' });

    const client = oauth.authorisedClient(
      { refreshToken: tokens.refreshToken!, accessToken: tokens.accessToken, expiresAt: new Date(Date.now() - 1000) },
      () => {},
    );
    const { token } = await client.getAccessToken();
    assert.ok(token && token !== tokens.accessToken, 'refreshed');

    await oauth.revoke(tokens.refreshToken!);
    assert.deepEqual(identity.grants(), []);
    await oauth.revoke(tokens.refreshToken!); // already revoked (400): not an error
  });

  it('makes the code exchange and the refresh once: a provider 500 is not retried', async (t) => {
    const identity = await standIn(t);
    const { oauth } = providerFor(identity);
    const verifier = randomBytes(32).toString('base64url');
    const code = await codeFor(identity, oauth, verifier);
    identity.injectFault({ endpoint: 'token', status: 503 });
    await assert.rejects(oauth.exchangeCode({ code, codeVerifier: verifier }));
    assert.equal(identity.calls.tokenRequests.length, 1);

    const tokens = await oauth.exchangeCode({ code, codeVerifier: verifier });
    identity.resetCounters();
    identity.injectFault({ endpoint: 'token', status: 500 });
    const client = oauth.authorisedClient({ refreshToken: tokens.refreshToken!, expiresAt: new Date(0) }, () => {});
    await assert.rejects(client.getAccessToken());
    assert.equal(identity.calls.tokenRequests.length, 1);
  });

  it('a refresh of a revoked grant fails with an error isInvalidGrant recognises', async (t) => {
    const identity = await standIn(t);
    const { oauth } = providerFor(identity);
    const verifier = randomBytes(32).toString('base64url');
    const tokens = await oauth.exchangeCode({ code: await codeFor(identity, oauth, verifier), codeVerifier: verifier });
    identity.revokeUser('user-alice');
    const client = oauth.authorisedClient({ refreshToken: tokens.refreshToken!, expiresAt: new Date(0) }, () => {});
    const err = await client.getAccessToken().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err, 'refresh failed');
    assert.equal(isInvalidGrant(err), true);
  });

  it('userinfo and revoke failures are errors; userinfo without an email is refused', async (t) => {
    const identity = await standIn(t);
    const { oauth } = providerFor(identity);
    await assert.rejects(oauth.userinfo('not-a-token'), /401/);
    identity.injectFault({ endpoint: 'revoke', status: 500 });
    await assert.rejects(oauth.revoke('whatever'), /500/);

    identity.setGrantedScope(`openid ${MAIL_SCOPE}`);
    const verifier = randomBytes(32).toString('base64url');
    const tokens = await oauth.exchangeCode({ code: await codeFor(identity, oauth, verifier), codeVerifier: verifier });
    await assert.rejects(oauth.userinfo(tokens.accessToken), /lacks sub or email/);
  });
});
