/**
 * POST /auth/provider/disconnect (api-spec part 4, runtime-contract part 3 "Revocation"):
 * stop the mail watch first, then revoke at the provider, delete the stored credentials and
 * end every session of the account; 204. A provider failure never leaves credentials behind.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import type { Browser } from '../../../harness/browser.ts';
import { csrfHeaders, signIn } from '../../helpers/providers.ts';
import { accountBySub, authWorld, JSON_TYPE, sessionOf, type AuthWorld } from './auth-fixtures.ts';

interface WatchCall {
  op: 'register' | 'stop';
  accountId: string;
  /** Revocations the provider had seen when the call happened. */
  revokesSoFar: number;
  grantLive: boolean;
}

/** An app whose mail watch records each call with what the identity provider had seen by then. */
async function watchedWorld(
  t: { after(fn: () => unknown): void },
  opts: { failStop?: boolean } = {},
): Promise<{ world: AuthWorld; watch: WatchCall[] }> {
  const calls: WatchCall[] = [];
  const world = await authWorld(
    t,
    {},
    {
      mailWatch: ({ identity }) => {
        const snapshot = (op: WatchCall['op'], accountId: string) =>
          calls.push({
            op,
            accountId,
            revokesSoFar: identity.calls.revoke,
            grantLive: identity.grants('user-alice').length > 0,
          });
        return {
          register: async (accountId) => void snapshot('register', accountId),
          stop: async (_em, accountId) => {
            snapshot('stop', accountId);
            if (opts.failStop) throw new Error('watch stop failed upstream');
          },
        };
      },
    },
  );
  return { world, watch: calls };
}

async function storedRefreshToken(world: AuthWorld, accountId: string): Promise<string> {
  const [row] = await world.sql<{ refresh_token_enc: string; account_id: string }>(
    'select account_id, refresh_token_enc from credentials where account_id = $1',
    [accountId],
  );
  return world.app.container.tokenCrypto.decrypt(row.refresh_token_enc, {
    accountId: row.account_id,
    field: 'refresh',
  });
}

async function disconnect(browser: Browser, csrfToken: string) {
  return browser.fetch('/auth/provider/disconnect', { method: 'POST', headers: csrfHeaders(csrfToken, WEB_ORIGIN) });
}

async function rowsFor(world: AuthWorld, table: string, accountId: string): Promise<number> {
  return (await world.sql(`select 1 from ${table} where account_id = $1`, [accountId])).length;
}

describe('POST /auth/provider/disconnect', () => {
  it('stops the watch, then revokes, deletes the credentials, ends the session and answers 204', async (t) => {
    const { world, watch } = await watchedWorld(t);
    const { identity } = world.providers;
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const account = await accountBySub(world, 'user-alice');
    await world.sql(`update sync_states set watch_expires_at = now() + interval '6 days' where account_id = $1`, [
      account.id,
    ]);
    const refreshToken = await storedRefreshToken(world, account.id);
    assert.equal(identity.grants().length, 1);

    const res = await disconnect(browser, csrfToken);
    assert.equal(res.status, 204);
    assert.equal(await res.text(), '');

    // Watch: stopped once, for this account, while the grant was still live (the stop call needs a token).
    const stops = watch.filter((c) => c.op === 'stop');
    assert.deepEqual(
      stops.map((c) => c.accountId),
      [account.id],
    );
    assert.equal(stops[0].revokesSoFar, 0, 'watch stopped before revoking');
    assert.equal(stops[0].grantLive, true);

    // Provider: one revocation, the grant is gone.
    assert.equal(identity.calls.revoke, 1);
    assert.deepEqual(identity.grants(), []);
    const refresh = await fetch(identity.tokenUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: identity.clientId,
        client_secret: identity.clientSecret,
      }),
    });
    assert.equal(refresh.status, 400, 'the old refresh token is dead at the provider');
    assert.equal((await refresh.json()).error, 'invalid_grant');

    // Service: credentials and sessions gone, watch bookkeeping cleared, the account itself kept.
    assert.equal(await rowsFor(world, 'credentials', account.id), 0);
    assert.equal(await rowsFor(world, 'sessions', account.id), 0);
    assert.equal((await world.app.syncState(account.id))!.watch_expires_at, null);
    assert.ok(await accountBySub(world, 'user-alice'), 'disconnect is not deletion');
    const cleared = res.headers.getSetCookie().find((c) => c.startsWith('mia_session=;'));
    assert.ok(cleared && /expires=Thu, 01 Jan 1970/i.test(cleared), 'the session cookie is cleared');
    assert.equal((await sessionOf(browser)).authenticated, false);
  });

  it('ends every session of the account: two browsers signed in as the same user both lose theirs; another user keeps his', async (t) => {
    const world = await authWorld(t);
    const { identity } = world.providers;
    const laptop = world.app.browser();
    const phone = world.app.browser();
    const { csrfToken } = await signIn(laptop);
    await signIn(phone);
    identity.setCurrentUser({ sub: 'user-bob', email: 'bob@example.com' });
    const bob = world.app.browser();
    await signIn(bob);
    const alice = await accountBySub(world, 'user-alice');
    const stored = await storedRefreshToken(world, alice.id);
    assert.equal(await rowsFor(world, 'sessions', alice.id), 2);

    assert.equal((await disconnect(laptop, csrfToken)).status, 204);
    assert.equal((await sessionOf(laptop)).authenticated, false, 'this browser signed out');
    assert.equal((await sessionOf(phone)).authenticated, false, 'the other browser signed out too');
    assert.equal(await rowsFor(world, 'sessions', alice.id), 0);
    assert.equal(await rowsFor(world, 'credentials', alice.id), 0);
    // The grant the service held is revoked (runtime-contract part 3: revocation by refresh token).
    assert.ok(!identity.grants('user-alice').some((g) => g.refreshToken === stored), 'the stored grant is revoked');
    // Bob is untouched.
    assert.equal((await sessionOf(bob)).authenticated, true);
    assert.equal(identity.grants('user-bob').length, 1);
    const bobAccount = await accountBySub(world, 'user-bob');
    assert.equal(await rowsFor(world, 'credentials', bobAccount.id), 1);
  });

  it('a revocation failure at the provider (500) still deletes the credentials and ends the sessions', async (t) => {
    const world = await authWorld(t);
    const { identity } = world.providers;
    const browser = world.app.browser();
    const other = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const account = await accountBySub(world, 'user-alice');
    for (const [k, v] of browser.cookies) other.cookies.set(k, v);
    identity.injectFault({ endpoint: 'revoke', status: 500 });

    const res = await disconnect(browser, csrfToken);
    assert.equal(res.status, 204);
    assert.equal(identity.calls.revoke, 1, 'revocation was attempted');
    assert.equal(await rowsFor(world, 'credentials', account.id), 0, 'no credentials left behind');
    assert.equal(await rowsFor(world, 'sessions', account.id), 0);
    assert.equal((await sessionOf(other)).authenticated, false);
    assert.ok(
      world.app.logs.some((l) => l.level === 'warn' && l.accountId === account.id && /revok/i.test(String(l.msg))),
      'the failure is logged',
    );
  });

  it('a provider that cannot be reached at all still leaves no credentials behind', async (t) => {
    const world = await authWorld(t);
    const { identity } = world.providers;
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const account = await accountBySub(world, 'user-alice');
    identity.injectFault({ endpoint: 'revoke', status: 0 });
    assert.equal((await disconnect(browser, csrfToken)).status, 204);
    assert.equal(await rowsFor(world, 'credentials', account.id), 0);
  });

  it('a failing watch stop does not prevent revocation and removal', async (t) => {
    const { world, watch } = await watchedWorld(t, { failStop: true });
    const { identity } = world.providers;
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const account = await accountBySub(world, 'user-alice');
    assert.equal((await disconnect(browser, csrfToken)).status, 204);
    assert.equal(watch.filter((c) => c.op === 'stop').length, 1);
    assert.deepEqual(identity.grants(), []);
    assert.equal(await rowsFor(world, 'credentials', account.id), 0);
  });

  it('through /trpc (auth.disconnect) with the same effects', async (t) => {
    const { world, watch } = await watchedWorld(t);
    const { identity } = world.providers;
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const account = await accountBySub(world, 'user-alice');
    const res = await browser.fetch('/trpc/auth.disconnect', {
      method: 'POST',
      headers: { ...csrfHeaders(csrfToken, WEB_ORIGIN), ...JSON_TYPE },
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(
      watch.filter((c) => c.op === 'stop').map((c) => c.accountId),
      [account.id],
    );
    assert.deepEqual(identity.grants(), []);
    assert.equal(await rowsFor(world, 'credentials', account.id), 0);
    assert.equal(await rowsFor(world, 'sessions', account.id), 0);
    assert.equal((await sessionOf(browser)).authenticated, false);
  });

  it('after disconnecting, signing in again reconnects the same account with a new grant', async (t) => {
    const world = await authWorld(t);
    const { identity } = world.providers;
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const before = await accountBySub(world, 'user-alice');
    assert.equal((await disconnect(browser, csrfToken)).status, 204);
    const again = await signIn(browser);
    assert.equal(again.email, 'alice@example.com');
    const after = await accountBySub(world, 'user-alice');
    assert.equal(after.id, before.id);
    assert.equal(identity.grants().length, 1);
    assert.equal(await storedRefreshToken(world, after.id), identity.grants()[0].refreshToken);
  });
});
