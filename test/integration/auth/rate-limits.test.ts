/**
 * Per-route limits of api-spec part 8 for the auth and analytics routes: 20/60 s on
 * /auth/provider, the callback, disconnect and account deletion; 60/60 s on analytics. The
 * request over the limit is RATE_LIMITED 429 with Retry-After; every request counts, refused
 * ones included; each route has its own bucket, and a procedure shares it with /trpc.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { Browser } from '../../../harness/browser.ts';
import { csrfHeaders, signIn } from '../../helpers/providers.ts';
import { authWorld, expectEnvelope, expectTrpcError, JSON_TYPE, OAUTH_FAILED_URL } from './auth-fixtures.ts';

function assertRetryAfter(res: Response) {
  const value = res.headers.get('retry-after');
  assert.match(value ?? '', /^[1-9]\d*$/, `Retry-After is a positive number of seconds (got ${value})`);
  assert.ok(Number(value) <= 60, 'within the 60 s window');
}

async function exhaust(n: number, send: () => Promise<Response>, expectStatus: number) {
  for (let i = 1; i <= n; i++) {
    const res = await send();
    assert.equal(res.status, expectStatus, `request ${i} of ${n}`);
    await res.arrayBuffer();
  }
}

describe('rate limits of the auth routes (20 per 60 s per client)', () => {
  it('GET /auth/provider: the 21st request is RATE_LIMITED 429 with Retry-After; other buckets are unaffected', async (t) => {
    const world = await authWorld(t);
    const anon = new Browser(world.app.url);
    await exhaust(20, () => anon.fetch('/auth/provider'), 302);
    const res = await anon.fetch('/auth/provider');
    await expectEnvelope(res.clone(), 'RATE_LIMITED', 429);
    assertRetryAfter(res);
    // Its own bucket: the callback and the global routes still answer.
    const cb = await anon.fetch('/auth/provider/callback?state=unknown&code=x');
    assert.equal(cb.status, 302);
    assert.equal(cb.headers.get('location'), OAUTH_FAILED_URL);
    assert.equal((await anon.fetch('/auth/session')).status, 200);
  });

  it('GET /auth/provider/callback: failed callbacks count too; the 21st is 429 with Retry-After', async (t) => {
    const world = await authWorld(t);
    const anon = new Browser(world.app.url);
    await exhaust(20, () => anon.fetch('/auth/provider/callback?state=nope&code=nope'), 302);
    const res = await anon.fetch('/auth/provider/callback?state=nope&code=nope');
    await expectEnvelope(res.clone(), 'RATE_LIMITED', 429);
    assertRetryAfter(res);
    assert.equal((await anon.fetch('/auth/provider')).status, 302, '/auth/provider has its own bucket');
  });

  it('POST /auth/provider/disconnect: refused (401) requests count, REST and /trpc share the bucket', async (t) => {
    const world = await authWorld(t);
    const anon = new Browser(world.app.url);
    await exhaust(10, () => anon.fetch('/auth/provider/disconnect', { method: 'POST' }), 401);
    await exhaust(10, () => anon.fetch('/trpc/auth.disconnect', { method: 'POST', headers: JSON_TYPE }), 401);
    const rest = await anon.fetch('/auth/provider/disconnect', { method: 'POST' });
    await expectEnvelope(rest.clone(), 'RATE_LIMITED', 429);
    assertRetryAfter(rest);
    const trpc = await anon.fetch('/trpc/auth.disconnect', { method: 'POST', headers: JSON_TYPE });
    await expectTrpcError(trpc.clone(), 'RATE_LIMITED', 429);
    assertRetryAfter(trpc);
  });

  it('a signed-in user over the disconnect limit is not disconnected', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    await exhaust(
      20,
      () => browser.fetch('/auth/provider/disconnect', { method: 'POST', headers: { Origin: WEB_ORIGIN } }),
      403,
    );
    const res = await browser.fetch('/auth/provider/disconnect', {
      method: 'POST',
      headers: csrfHeaders(csrfToken, WEB_ORIGIN),
    });
    await expectEnvelope(res, 'RATE_LIMITED', 429);
    assert.equal((await world.sql('select 1 from credentials')).length, 1);
    assert.equal(world.providers.identity.grants().length, 1);
  });

  it('DELETE /auth/account: every request counts (malformed bodies included); the 21st is 429 and deletes nothing', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const headers = csrfHeaders(csrfToken, WEB_ORIGIN);
    await exhaust(
      8,
      () =>
        browser.fetch('/auth/account', {
          method: 'DELETE',
          headers: { ...headers, ...JSON_TYPE },
          body: '{"confirm":',
        }),
      400,
    );
    await exhaust(
      6,
      () => browser.fetch('/auth/account', { method: 'DELETE', headers, json: { confirm: false } }),
      400,
    );
    await exhaust(
      6,
      () => browser.fetch('/trpc/auth.deleteAccount', { method: 'POST', headers, json: { confirm: false } }),
      400,
    );
    const res = await browser.fetch('/auth/account', { method: 'DELETE', headers, json: { confirm: true } });
    await expectEnvelope(res.clone(), 'RATE_LIMITED', 429);
    assertRetryAfter(res);
    assert.equal(await world.app.accountCount(), 1, 'nothing deleted');
  });
});

describe('rate limit of POST /api/analytics/event (60 per 60 s per client)', () => {
  it('the 61st event is RATE_LIMITED 429 with Retry-After, whatever its name', async (t) => {
    const world = await authWorld(t);
    const anon = new Browser(world.app.url);
    await exhaust(
      30,
      () =>
        anon.fetch('/api/analytics/event', { method: 'POST', json: { event: 'page_view', properties: { path: '/' } } }),
      200,
    );
    await exhaust(
      20,
      () => anon.fetch('/api/analytics/event', { method: 'POST', json: { event: 'unknown_event' } }),
      200,
    );
    await exhaust(
      10,
      () =>
        anon.fetch('/api/analytics/event', { method: 'POST', json: { event: 'page_view', properties: { path: 1 } } }),
      400,
    );
    const res = await anon.fetch('/api/analytics/event', {
      method: 'POST',
      json: { event: 'page_view', properties: { path: '/' } },
    });
    await expectEnvelope(res.clone(), 'RATE_LIMITED', 429);
    assertRetryAfter(res);
    const [row] = await world.sql<{ n: string }>('select count(*) as n from analytics_events');
    assert.equal(Number(row.n), 30, 'the refused event was not stored');
    assert.equal((await anon.fetch('/auth/session')).status, 200, 'the global bucket is separate');
  });
});
