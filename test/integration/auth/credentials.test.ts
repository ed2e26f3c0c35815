/**
 * Provider credentials at rest and on refresh (runtime-contract parts 2 and 3, api-spec 5.7):
 * tokens are stored AES-256-GCM-encrypted under TOKEN_ENCRYPTION_KEY; a refreshed access
 * token is stored back encrypted; a refresh answered invalid_grant becomes TOKEN_EXPIRED 401
 * and marks the account as needing reconnection. (The mail routes that surface it over HTTP
 * belong to the mail feature; here the credentials service is driven directly.)
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OAuth2Client } from 'google-auth-library';
import { AppError } from '../../../server/domain/errors.ts';
import { createTokenCrypto } from '../../../server/domain/auth/token-crypto.ts';
import { signIn } from '../../helpers/providers.ts';
import { accountBySub, authWorld, type AuthWorld } from './auth-fixtures.ts';

interface CredentialRow {
  account_id: string;
  key_id: string;
  refresh_token_enc: string;
  access_token_enc: string | null;
  access_token_expires_at: Date | null;
  scope: string;
}

async function credentialRow(world: AuthWorld, accountId: string): Promise<CredentialRow> {
  const [row] = await world.sql<CredentialRow>('select * from credentials where account_id = $1', [accountId]);
  assert.ok(row, 'credentials stored');
  return row;
}

async function signedInAlice(t: { after(fn: () => unknown): void }) {
  const world = await authWorld(t);
  await signIn(world.app.browser());
  const account = await accountBySub(world, 'user-alice');
  return { world, account };
}

/** Runs a provider call the way a mail route does: invalid_grant becomes TOKEN_EXPIRED. */
async function asRoute<T>(world: AuthWorld, accountId: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    await world.app.container.credentials.rethrowIfRevoked(accountId, err);
    throw err;
  }
}

async function clientFor(world: AuthWorld, accountId: string): Promise<OAuth2Client> {
  return world.app.container.credentials.client(world.app.container.orm.em.fork() as never, accountId);
}

async function expectTokenExpired(p: Promise<unknown>) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof AppError, `an AppError, got ${String(err)}`);
    assert.equal(err.code, 'TOKEN_EXPIRED');
    assert.equal(err.status, 401);
    return true;
  });
}

/** Waits (bounded) for a fire-and-forget database write to land. */
async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let v = await read();
  for (let i = 0; i < 100 && !ok(v); i++) {
    await sleep(20);
    v = await read();
  }
  return v;
}

describe('credentials at rest', () => {
  it('stores neither the raw refresh token nor the raw access token; both decrypt with the configured key', async (t) => {
    const { world, account } = await signedInAlice(t);
    const { identity } = world.providers;
    const { tokenCrypto } = world.app.container;
    const row = await credentialRow(world, account.id);
    const [grant] = identity.grants();
    const rawRefresh = grant.refreshToken!;
    assert.ok(rawRefresh, 'the stand-in issued a refresh token');
    assert.ok(identity.calls.tokenRequests.length >= 1);

    const rawAccess = tokenCrypto.decrypt(row.access_token_enc!, { accountId: row.account_id, field: 'access' });
    assert.equal(
      identity.accessTokenOwner(rawAccess)?.sub,
      'user-alice',
      'the stored access token is the one the provider issued',
    );
    assert.equal(
      tokenCrypto.decrypt(row.refresh_token_enc, { accountId: row.account_id, field: 'refresh' }),
      rawRefresh,
    );

    const dump = JSON.stringify(await world.sql('select * from credentials'));
    assert.ok(!dump.includes(rawRefresh), 'raw refresh token not in the table');
    assert.ok(!dump.includes(rawAccess), 'raw access token not in the table');
    // Nor anywhere else the service writes.
    for (const table of ['sessions', 'accounts', 'oauth_states', 'sync_states']) {
      const rows = JSON.stringify(await world.sql(`select * from ${table}`));
      assert.ok(!rows.includes(rawRefresh) && !rows.includes(rawAccess), `no raw token in ${table}`);
    }
    const logs = JSON.stringify(world.app.logs);
    assert.ok(!logs.includes(rawRefresh) && !logs.includes(rawAccess), 'no raw token in the logs');

    // AES-256-GCM envelope naming the key; a crypto built from TOKEN_ENCRYPTION_KEY alone decrypts it.
    assert.match(row.refresh_token_enc, /^v2\.[0-9a-f]{12}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    assert.equal(row.key_id, tokenCrypto.keyId);
    const fromConfig = createTokenCrypto(world.app.config.tokenKeys!);
    assert.equal(
      fromConfig.decrypt(row.refresh_token_enc, { accountId: row.account_id, field: 'refresh' }),
      rawRefresh,
    );
    assert.equal(fromConfig.decrypt(row.access_token_enc!, { accountId: row.account_id, field: 'access' }), rawAccess);
    // Another key cannot, and a tampered ciphertext is refused.
    assert.throws(() =>
      createTokenCrypto([randomBytes(32)]).decrypt(row.refresh_token_enc, {
        accountId: row.account_id,
        field: 'refresh',
      }),
    );
    const parts = row.refresh_token_enc.split('.');
    parts[4] = (parts[4][0] === 'A' ? 'B' : 'A') + parts[4].slice(1);
    assert.throws(() => tokenCrypto.decrypt(parts.join('.'), { accountId: account.id, field: 'refresh' }));
    assert.ok(row.scope.includes('https://www.googleapis.com/auth/gmail.readonly'));
  });

  it('an expired access token is refreshed with the stored refresh token and the new one is stored back encrypted', async (t) => {
    const { world, account } = await signedInAlice(t);
    const { identity } = world.providers;
    const { tokenCrypto } = world.app.container;
    await world.sql(
      `update credentials set access_token_expires_at = now() - interval '1 minute' where account_id = $1`,
      [account.id],
    );
    const before = await credentialRow(world, account.id);
    const client = await clientFor(world, account.id);
    const { token } = await asRoute(world, account.id, () => client.getAccessToken());
    assert.ok(token);
    assert.equal(identity.accessTokenOwner(token)?.sub, 'user-alice', 'a live access token');
    assert.notEqual(
      token,
      tokenCrypto.decrypt(before.access_token_enc!, { accountId: before.account_id, field: 'access' }),
      'a new one',
    );
    const refreshes = identity.calls.tokenRequests.filter((r) => r.grant_type === 'refresh_token');
    assert.equal(refreshes.length, 1);
    assert.equal(refreshes[0].refresh_token, identity.grants()[0].refreshToken);

    const after = await eventually(
      () => credentialRow(world, account.id),
      (r) => r.access_token_enc !== before.access_token_enc,
    );
    assert.notEqual(after.access_token_enc, before.access_token_enc, 'the refreshed token is stored');
    assert.equal(tokenCrypto.decrypt(after.access_token_enc!, { accountId: after.account_id, field: 'access' }), token);
    assert.ok(!JSON.stringify(after).includes(token), 'stored encrypted');
    assert.ok(
      after.access_token_expires_at && after.access_token_expires_at.getTime() > Date.now(),
      'with its new expiry',
    );
    assert.equal(after.refresh_token_enc, before.refresh_token_enc, 'the refresh token is kept');
  });
});

describe('a revoked or expired grant upstream', () => {
  it('invalid_grant on refresh (stored token expired) yields TOKEN_EXPIRED 401 and marks the account needs_reconnect', async (t) => {
    const { world, account } = await signedInAlice(t);
    const { identity } = world.providers;
    assert.equal(account.needsReconnect, false);
    identity.revokeUser('user-alice');
    identity.expireAccessTokens();
    await world.sql(
      `update credentials set access_token_expires_at = now() - interval '1 minute' where account_id = $1`,
      [account.id],
    );
    const client = await clientFor(world, account.id);
    await expectTokenExpired(asRoute(world, account.id, () => client.getAccessToken()));
    assert.equal(
      identity.calls.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length,
      1,
      'one refresh attempt',
    );
    assert.equal((await accountBySub(world, 'user-alice')).needsReconnect, true);
    assert.ok(world.app.logs.some((l) => l.accountId === account.id && /reconnect/i.test(String(l.msg))));
  });

  it('a 401 on a provider call with a seemingly fresh token refreshes once; invalid_grant then yields TOKEN_EXPIRED', async (t) => {
    const { world, account } = await signedInAlice(t);
    const { identity } = world.providers;
    identity.revokeUser('user-alice');
    identity.expireAccessTokens();
    const client = await clientFor(world, account.id);
    await expectTokenExpired(asRoute(world, account.id, () => client.request({ url: identity.userinfoUrl })));
    assert.equal(identity.calls.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length, 1);
    assert.equal((await accountBySub(world, 'user-alice')).needsReconnect, true);
  });

  it('signing in again clears needs_reconnect and stores working credentials', async (t) => {
    const { world, account } = await signedInAlice(t);
    const { identity } = world.providers;
    identity.revokeUser('user-alice');
    await world.sql(
      `update credentials set access_token_expires_at = now() - interval '1 minute' where account_id = $1`,
      [account.id],
    );
    const client = await clientFor(world, account.id);
    await expectTokenExpired(asRoute(world, account.id, () => client.getAccessToken()));
    assert.equal((await accountBySub(world, 'user-alice')).needsReconnect, true);

    await signIn(world.app.browser());
    const after = await accountBySub(world, 'user-alice');
    assert.equal(after.id, account.id);
    assert.equal(after.needsReconnect, false);
    const fresh = await clientFor(world, account.id);
    const { token } = await fresh.getAccessToken();
    assert.equal(identity.accessTokenOwner(token!)?.sub, 'user-alice');
  });

  it('a refresh that fails for another reason (provider 500) is neither TOKEN_EXPIRED nor marks the account, and is not retried', async (t) => {
    const { world, account } = await signedInAlice(t);
    const { identity } = world.providers;
    await world.sql(
      `update credentials set access_token_expires_at = now() - interval '1 minute' where account_id = $1`,
      [account.id],
    );
    identity.injectFault({ endpoint: 'token', status: 500 });
    const client = await clientFor(world, account.id);
    await assert.rejects(
      asRoute(world, account.id, () => client.getAccessToken()),
      (err: unknown) => {
        assert.ok(!(err instanceof AppError && err.code === 'TOKEN_EXPIRED'), 'not TOKEN_EXPIRED');
        return true;
      },
    );
    assert.equal(identity.calls.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length, 1, 'one attempt');
    assert.equal((await accountBySub(world, 'user-alice')).needsReconnect, false);
  });

  it('no stored credentials (after disconnect) is TOKEN_EXPIRED', async (t) => {
    const { world, account } = await signedInAlice(t);
    await world.sql('delete from credentials where account_id = $1', [account.id]);
    await expectTokenExpired(clientFor(world, account.id));
  });
});
