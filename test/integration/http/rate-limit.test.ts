/**
 * Rate limits (spec part 8, runtime-contract 4a): the configurable global default, one
 * shared bucket per client for the routes under it, REST and /trpc counting together,
 * client keys (X-Forwarded-For only with TRUST_PROXY=true), counters in PostgreSQL, and
 * every request counting, refused ones included.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_TABLE } from '../../../shared/errors.ts';
import { ADMIN_TOKEN, buildTestApp, type TestApp } from '../../helpers/app.ts';

const LIMITED = { RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW_SECONDS: '60' };

const get = (app: TestApp, path: string, headers: Record<string, string> = {}) =>
  fetch(`${app.url}${path}`, { headers });

/** Asserts the standard RateLimit-* headers of an answer under the 5/60 limit. */
function assertRateLimitHeaders(res: Response, remaining: number, where: string) {
  assert.equal(res.headers.get('ratelimit-limit'), '5', `${where}: RateLimit-Limit`);
  assert.equal(res.headers.get('ratelimit-remaining'), String(remaining), `${where}: RateLimit-Remaining`);
  const reset = Number(res.headers.get('ratelimit-reset'));
  assert.ok(
    Number.isInteger(reset) && reset >= 0 && reset <= 60,
    `${where}: RateLimit-Reset ${res.headers.get('ratelimit-reset')}`,
  );
}

/**
 * Asserts a REST 429 RATE_LIMITED envelope with Retry-After. (The RateLimit-* headers of a
 * 429 are checked once per kind of route, in the first tests, so that one defect fails one test.)
 */
async function assertRateLimited(res: Response, where: string) {
  const text = await res.text();
  assert.equal(res.status, 429, `${where}: status (body ${text})`);
  const body = JSON.parse(text);
  assert.equal(body.error.code, 'RATE_LIMITED', where);
  assert.equal(body.error.message, ERROR_TABLE.RATE_LIMITED.message, where);
  assert.equal(body.error.requestId, res.headers.get('x-request-id'), where);
  const retryAfter = res.headers.get('retry-after') ?? '';
  assert.match(retryAfter, /^[1-9]\d*$/, `${where}: Retry-After is a positive integer`);
  assert.ok(Number(retryAfter) <= 60, `${where}: Retry-After within the window`);
}

describe('global default rate limit', () => {
  it('refuses the 6th request to /health with RATE_LIMITED, Retry-After and RateLimit-* headers', async (t) => {
    const app = await buildTestApp(t, { env: LIMITED });
    for (let i = 0; i < 5; i++) {
      const res = await get(app, '/health');
      assert.equal(res.status, 200, `request ${i + 1}`);
      assertRateLimitHeaders(res, 4 - i, `request ${i + 1}`);
    }
    const sixth = await get(app, '/health');
    assertRateLimitHeaders(sixth, 0, '6th /health');
    await assertRateLimited(sixth, '6th /health');
  });

  it('refuses the 6th request to /auth/session the same way', async (t) => {
    const app = await buildTestApp(t, { env: LIMITED });
    for (let i = 0; i < 5; i++) {
      const res = await get(app, '/auth/session');
      assert.equal(res.status, 200, `request ${i + 1}`);
      assertRateLimitHeaders(res, 4 - i, `request ${i + 1}`);
    }
    const sixth = await get(app, '/auth/session');
    assertRateLimitHeaders(sixth, 0, '6th /auth/session');
    await assertRateLimited(sixth, '6th /auth/session');
    // Still refused: the client stays blocked for the window.
    await assertRateLimited(await get(app, '/auth/session'), '7th /auth/session');
  });

  it('is 100 per 60 s by default', async (t) => {
    const app = await buildTestApp(t);
    const res = await get(app, '/auth/session');
    assert.equal(res.headers.get('ratelimit-limit'), '100');
    assert.equal(res.headers.get('ratelimit-remaining'), '99');
    assert.ok(Number(res.headers.get('ratelimit-reset')) <= 60);
  });

  it('shares one bucket per client among the routes under the global default', async (t) => {
    const app = await buildTestApp(t, { env: LIMITED });
    const paths = ['/health', '/auth/session', '/api/status/incidents', '/', '/openapi.json'];
    for (const [i, p] of paths.entries()) {
      const res = await get(app, p);
      assert.equal(res.status, 200, p);
      assertRateLimitHeaders(res, 4 - i, p);
    }
    const logout = await fetch(`${app.url}/auth/logout`, { method: 'POST' });
    await assertRateLimited(logout, 'POST /auth/logout after 5 other routes');
    for (const p of paths) assert.equal((await get(app, p)).status, 429, `${p} is refused too`);
  });

  it('counts REST and /trpc together for the same procedure', async (t) => {
    const app = await buildTestApp(t, { env: LIMITED });
    for (let i = 0; i < 3; i++) assert.equal((await get(app, '/auth/session')).status, 200);
    for (let i = 0; i < 2; i++) {
      const res = await get(app, '/trpc/auth.session');
      assert.equal(res.status, 200);
      assertRateLimitHeaders(res, 1 - i, `/trpc/auth.session ${i + 1}`);
    }
    const trpc = await get(app, '/trpc/auth.session');
    assert.equal(trpc.status, 429);
    assert.match(trpc.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    const body = await trpc.json();
    assert.equal(body.error.data.appCode, 'RATE_LIMITED');
    assert.equal(body.error.data.requestId, trpc.headers.get('x-request-id'));
    await assertRateLimited(await get(app, '/auth/session'), 'REST after /trpc exhausted the bucket');
    assert.equal((await get(app, '/trpc/system.health')).status, 429, 'other procedures share the global bucket');
  });

  it('counts refused requests too: unknown routes, FORBIDDEN and invalid input', async (t) => {
    const app = await buildTestApp(t, { env: LIMITED });
    assert.equal((await get(app, '/nope')).status, 404);
    assert.equal(
      (
        await fetch(`${app.url}/api/status/incidents`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: '{}',
        })
      ).status,
      403,
    );
    const invalid = await fetch(`${app.url}/api/status/incidents`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${ADMIN_TOKEN}` },
      body: '{"kind":"nope"}',
    });
    assert.equal(invalid.status, 400);
    assert.equal((await get(app, '/trpc/status.incidents')).status, 200);
    assert.equal((await get(app, '/health')).status, 200);
    await assertRateLimited(await get(app, '/health'), '6th request after refused ones');
    // Over the limit, the limit answers first, before any other check.
    const forbidden = await fetch(`${app.url}/api/status/incidents`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    assert.equal(forbidden.status, 429);
  });

  it('counts requests refused before the procedure runs too (malformed body, unknown /trpc procedure)', async (t) => {
    const app = await buildTestApp(t, { env: LIMITED });
    const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${ADMIN_TOKEN}` };
    assert.equal(
      (await fetch(`${app.url}/api/status/incidents`, { method: 'POST', headers, body: '{"kind":' })).status,
      400,
    );
    assert.equal(
      (
        await fetch(`${app.url}/api/status/incidents`, {
          method: 'POST',
          headers: { ...headers, 'Content-Type': 'text/plain' },
          body: 'x',
        })
      ).status,
      400,
    );
    assert.equal(
      (
        await fetch(`${app.url}/api/status/incidents`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ m: 'x'.repeat(70 * 1024) }),
        })
      ).status,
      400,
    );
    assert.equal((await get(app, '/trpc/nope.nothing')).status, 404);
    assert.equal((await get(app, '/trpc/status.createIncident')).status, 404);
    await assertRateLimited(await get(app, '/health'), '6th request after 5 requests refused before the procedure');
  });
});

describe('client keys', () => {
  it('with TRUST_PROXY=true, keys by the entry the proxy appended: a client rotating its own X-Forwarded-For is still limited', async (t) => {
    const app = await buildTestApp(t, { env: { ...LIMITED, TRUST_PROXY: 'true' } });
    // An appending proxy (nginx's $proxy_add_x_forwarded_for) puts the real address last.
    const alice = (forged: string) => ({ 'X-Forwarded-For': `${forged}, 203.0.113.7` });
    for (let i = 0; i < 5; i++)
      assert.equal((await get(app, '/health', alice(`10.0.0.${i + 1}`))).status, 200, `alice ${i + 1}`);
    await assertRateLimited(await get(app, '/health', alice('10.9.9.9')), 'alice 6th, with yet another forged entry');
    const bob = await get(app, '/health', { 'X-Forwarded-For': '203.0.113.7, 198.51.100.9' });
    assert.equal(bob.status, 200, "another client (forging alice's address) has its own bucket");
    assertRateLimitHeaders(bob, 4, 'bob');
  });

  it('with TRUST_PROXY_HOPS=2, keys by the second entry from the right', async (t) => {
    const app = await buildTestApp(t, { env: { ...LIMITED, TRUST_PROXY: 'true', TRUST_PROXY_HOPS: '2' } });
    // forged, client (appended by the edge proxy), edge proxy (appended by the inner one)
    for (let i = 0; i < 5; i++)
      assert.equal(
        (await get(app, '/health', { 'X-Forwarded-For': `10.1.0.${i}, 203.0.113.8, 10.0.0.${i}` })).status,
        200,
      );
    await assertRateLimited(
      await get(app, '/health', { 'X-Forwarded-For': '10.1.9.9, 203.0.113.8, 10.0.0.99' }),
      'the client behind two proxies',
    );
  });

  it('counts an IPv6 client by its /64, and bounds whatever the header holds', async (t) => {
    const app = await buildTestApp(t, { env: { ...LIMITED, TRUST_PROXY: 'true' } });
    for (let i = 0; i < 5; i++)
      assert.equal(
        (await get(app, '/health', { 'X-Forwarded-For': `2001:db8:aa:bb::${(i + 1).toString(16)}` })).status,
        200,
      );
    await assertRateLimited(
      await get(app, '/health', { 'X-Forwarded-For': '2001:db8:aa:bb:ffff:1:2:3' }),
      'another address of the same /64',
    );
    assert.equal(
      (await get(app, '/health', { 'X-Forwarded-For': '2001:db8:aa:bc::1' })).status,
      200,
      'the next /64 is another client',
    );
    // Not an address, and longer than the counters' key column: still one bounded key, counted in the database.
    const junk = { 'X-Forwarded-For': 'x'.repeat(600) };
    for (let i = 0; i < 5; i++) assert.equal((await get(app, '/health', junk)).status, 200);
    await assertRateLimited(await get(app, '/health', junk), 'the 6th from an unparsable address');
    const { rows } = await app.container.pool.query<{ n: number; longest: number }>(
      'select count(*)::int as n, max(length(key))::int as longest from rate_limits',
    );
    assert.ok(rows[0]!.longest < 100, `keys bounded (${rows[0]!.longest})`);
  });

  it('with TRUST_PROXY unset, ignores X-Forwarded-For', async (t) => {
    const app = await buildTestApp(t, { env: LIMITED });
    for (let i = 0; i < 5; i++)
      assert.equal((await get(app, '/health', { 'X-Forwarded-For': `198.51.100.${i + 1}` })).status, 200);
    await assertRateLimited(
      await get(app, '/health', { 'X-Forwarded-For': '192.0.2.200' }),
      'a forged X-Forwarded-For does not buy a new bucket',
    );
    await assertRateLimited(await get(app, '/health'), 'without the header either');
  });
});

describe('counters in PostgreSQL', () => {
  it('two instances on the same database share the bucket', async (t) => {
    const first = await buildTestApp(t, { env: LIMITED });
    const second = await buildTestApp(t, { env: LIMITED, databaseUrl: first.databaseUrl });
    for (let i = 0; i < 3; i++) assert.equal((await get(first, '/health')).status, 200, `first ${i + 1}`);
    const s1 = await get(second, '/auth/session');
    assert.equal(s1.status, 200);
    assertRateLimitHeaders(s1, 1, "second instance sees the first one's count");
    assert.equal((await get(second, '/health')).status, 200);
    await assertRateLimited(await get(second, '/health'), 'second instance, 6th overall');
    await assertRateLimited(await get(first, '/auth/session'), 'first instance, 7th overall');
  });

  it('a fresh database has a fresh bucket (control)', async (t) => {
    const first = await buildTestApp(t, { env: LIMITED });
    const other = await buildTestApp(t, { env: LIMITED });
    for (let i = 0; i < 5; i++) assert.equal((await get(first, '/health')).status, 200);
    assert.equal((await get(first, '/health')).status, 429);
    assert.equal((await get(other, '/health')).status, 200, 'another database keeps its own counters');
  });
});
