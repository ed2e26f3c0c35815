/**
 * CSRF (api-spec part 5.4, part 7 CSRF_FAILED) on disconnect and account deletion, REST and
 * /trpc: X-CSRF-Token equal to the session's token AND Origin equal to WEB_ORIGIN, else
 * CSRF_FAILED 403 with nothing done. AUTH_REQUIRED 401 on every authenticated route that
 * exists today. Read routes, logout and analytics need no CSRF token.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { Browser } from '../../../harness/browser.ts';
import { signIn } from '../../helpers/providers.ts';
import {
  authWorld,
  expectEnvelope,
  expectTrpcError,
  JSON_TYPE,
  SESSION_COOKIE,
  sessionOf,
  type AuthWorld,
} from './auth-fixtures.ts';

interface Route {
  name: string;
  /** Sends the call from `browser` with exactly `headers` (and no Origin unless given). */
  send(browser: Browser, headers: Record<string, string>): Promise<Response>;
  trpc: boolean;
}

const ROUTES: Route[] = [
  {
    name: 'POST /auth/provider/disconnect',
    trpc: false,
    send: (b, h) => b.fetch('/auth/provider/disconnect', { method: 'POST', headers: h }),
  },
  {
    name: 'POST /trpc/auth.disconnect',
    trpc: true,
    send: (b, h) => b.fetch('/trpc/auth.disconnect', { method: 'POST', headers: { ...JSON_TYPE, ...h } }),
  },
  {
    name: 'DELETE /auth/account',
    trpc: false,
    send: (b, h) => b.fetch('/auth/account', { method: 'DELETE', headers: h, json: { confirm: true } }),
  },
  {
    name: 'POST /trpc/auth.deleteAccount',
    trpc: true,
    send: (b, h) => b.fetch('/trpc/auth.deleteAccount', { method: 'POST', headers: h, json: { confirm: true } }),
  },
];

/** A browser carrying `from`'s cookies but sending no Origin by itself. */
function bare(world: AuthWorld, from?: Browser): Browser {
  const b = new Browser(world.app.url);
  if (from) for (const [k, v] of from.cookies) b.cookies.set(k, v);
  return b;
}

async function expectCode(route: Route, res: Response, code: string, status: number) {
  if (route.trpc) await expectTrpcError(res, code, status);
  else await expectEnvelope(res, code, status);
}

/** Nothing was done: the account, its credentials, its grant and the session are all still there. */
async function assertUntouched(world: AuthWorld, browser: Browser, why: string) {
  const alice = await world.app.account({ sub: 'user-alice' });
  assert.ok(alice, `${why}: account kept`);
  assert.equal(
    (await world.sql('select 1 from credentials where account_id = $1', [alice.id])).length,
    1,
    `${why}: credentials kept`,
  );
  assert.equal(world.providers.identity.grants('user-alice').length, 1, `${why}: grant not revoked`);
  assert.equal((await sessionOf(browser)).authenticated, true, `${why}: session kept`);
}

for (const route of ROUTES) {
  describe(`CSRF on ${route.name}`, () => {
    it('refuses a missing token, a wrong token, a wrong Origin and a missing Origin with CSRF_FAILED 403, doing nothing', async (t) => {
      const world = await authWorld(t);
      const browser = world.app.browser();
      const { csrfToken } = await signIn(browser);
      const alice = (await world.app.account({ sub: 'user-alice' }))!;
      // A valid token of another session is still the wrong token.
      world.providers.identity.setCurrentUser({ sub: 'user-bob', email: 'bob@example.com' });
      const bob = world.app.browser();
      const { csrfToken: bobToken } = await signIn(bob);

      const cases: [string, Record<string, string>][] = [
        ['missing token', { Origin: WEB_ORIGIN }],
        ['empty token', { Origin: WEB_ORIGIN, 'X-CSRF-Token': '' }],
        [
          'wrong token',
          { Origin: WEB_ORIGIN, 'X-CSRF-Token': `${csrfToken.slice(0, -1)}${csrfToken.endsWith('A') ? 'B' : 'A'}` },
        ],
        ["another session's token", { Origin: WEB_ORIGIN, 'X-CSRF-Token': bobToken }],
        ['token with a suffix', { Origin: WEB_ORIGIN, 'X-CSRF-Token': `${csrfToken}x` }],
        ['wrong Origin', { Origin: 'https://evil.example', 'X-CSRF-Token': csrfToken }],
        ['Origin on another port', { Origin: WEB_ORIGIN.replace(':5173', ':5174'), 'X-CSRF-Token': csrfToken }],
        ['Origin with a path', { Origin: `${WEB_ORIGIN}/`, 'X-CSRF-Token': csrfToken }],
        ['Origin null', { Origin: 'null', 'X-CSRF-Token': csrfToken }],
        ['missing Origin', { 'X-CSRF-Token': csrfToken }],
        ['missing both', {}],
      ];
      for (const [why, headers] of cases) {
        const res = await route.send(bare(world, browser), headers);
        await expectCode(route, res, 'CSRF_FAILED', 403);
        await assertUntouched(world, browser, why);
      }

      // The right token and Origin pass.
      const ok = await route.send(bare(world, browser), { Origin: WEB_ORIGIN, 'X-CSRF-Token': csrfToken });
      assert.equal(ok.status, route.trpc ? 200 : 204, `accepted (body ${await ok.clone().text()})`);
      assert.equal(
        (await world.sql('select 1 from credentials where account_id = $1', [alice.id])).length,
        0,
        'the call took effect',
      );
      assert.equal(world.providers.identity.grants('user-alice').length, 0, 'revoked');
      assert.equal((await sessionOf(bob)).authenticated, true, "bob's session is not affected");
    });
  });
}

describe('AUTH_REQUIRED on every authenticated route that exists today', () => {
  it('without a session, with a stale cookie, whatever the CSRF headers and body (REST and /trpc)', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const stale = bare(world, browser);
    await browser.fetch('/auth/logout', { method: 'POST' });
    assert.ok(stale.cookies.has(SESSION_COOKIE));

    const headerSets: Record<string, string>[] = [{}, { Origin: WEB_ORIGIN, 'X-CSRF-Token': csrfToken }];
    for (const route of ROUTES) {
      for (const who of [bare(world), stale]) {
        for (const headers of headerSets) {
          const res = await route.send(who, headers);
          await expectCode(route, res, 'AUTH_REQUIRED', 401);
        }
      }
    }
    // Account deletion checks the session before the body: no body, a wrong body, a malformed body.
    const anon = bare(world);
    await expectEnvelope(await anon.fetch('/auth/account', { method: 'DELETE' }), 'AUTH_REQUIRED', 401);
    await expectEnvelope(
      await anon.fetch('/auth/account', { method: 'DELETE', json: { confirm: false } }),
      'AUTH_REQUIRED',
      401,
    );
    await expectEnvelope(
      await anon.fetch('/auth/account', { method: 'DELETE', headers: JSON_TYPE, body: '{"confirm":' }),
      'AUTH_REQUIRED',
      401,
    );
    await expectTrpcError(
      await anon.fetch('/trpc/auth.deleteAccount', { method: 'POST', headers: JSON_TYPE, body: '{"confirm":' }),
      'AUTH_REQUIRED',
      401,
    );
    await expectTrpcError(
      await anon.fetch('/trpc/auth.deleteAccount', { method: 'POST', json: { confirm: 'nope' } }),
      'AUTH_REQUIRED',
      401,
    );
    // Nothing was touched.
    assert.equal((await world.sql('select 1 from credentials')).length, 1);
  });

  it('a signed-in user without CSRF headers gets CSRF_FAILED (not VALIDATION_FAILED) even with a bad deletion body', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    await signIn(browser);
    const b = bare(world, browser);
    await expectEnvelope(
      await b.fetch('/auth/account', { method: 'DELETE', headers: JSON_TYPE, body: '{"confirm":' }),
      'CSRF_FAILED',
      403,
    );
    await expectEnvelope(
      await b.fetch('/auth/account', { method: 'DELETE', json: { confirm: false } }),
      'CSRF_FAILED',
      403,
    );
    await expectEnvelope(await b.fetch('/auth/account', { method: 'DELETE' }), 'CSRF_FAILED', 403);
  });
});

describe('routes that need no CSRF token', () => {
  it('GET /auth/session, POST /api/analytics/event and POST /auth/logout work signed in without token or Origin', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    await signIn(browser);
    const b = bare(world, browser);
    const session = await b.fetch('/auth/session');
    assert.equal(session.status, 200);
    assert.equal((await session.json()).authenticated, true);
    const event = await b.fetch('/api/analytics/event', { method: 'POST', json: { event: 'sync_clicked' } });
    assert.equal(event.status, 200, await event.clone().text());
    assert.deepEqual(await event.json(), { ok: true });
    assert.equal(
      (await world.sql(`select 1 from analytics_events where name = 'sync_clicked' and account_id is not null`)).length,
      1,
    );
    const logout = await b.fetch('/auth/logout', { method: 'POST' });
    assert.equal(logout.status, 204);
    assert.equal((await sessionOf(browser)).authenticated, false);
  });
});
