/**
 * Disconnect and deletion end every session of the account for good, whatever is in
 * flight: a request of another device that was running when they happened saves its
 * session afterwards (koa-session writes the row back at the end of a request), and that
 * save must not bring the session back. Expired sessions and OAuth states are purged by
 * the maintenance round.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { ANALYTICS_RETENTION_DAYS } from '../../../server/domain/auth/purge-expired.ts';
import { createSessionStore, SESSION_IDLE_MS } from '../../../server/http/sessions.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import type { Browser } from '../../../harness/browser.ts';
import { csrfHeaders, signIn } from '../../helpers/providers.ts';
import { authWorld, sessionOf, SESSION_COOKIE, type AuthWorld } from '../auth/auth-fixtures.ts';

const sha256hex = (v: string) => createHash('sha256').update(v).digest('hex');

/** What the other device's request holds in memory while it runs: its cookie's key and session data. */
async function inFlightSession(world: AuthWorld, device: Browser) {
  const key = device.cookies.get(SESSION_COOKIE)!;
  const [row] = await world.sql<{ data: Record<string, unknown> }>('select data from sessions where id = $1', [
    sha256hex(key),
  ]);
  assert.ok(row, 'the device has a stored session');
  return { key, data: row.data };
}

/** One account signed in on a laptop and a phone; the phone's request is in flight. */
async function twoDevices(t: { after(fn: () => unknown): void }) {
  const world = await authWorld(t);
  const laptop = world.app.browser();
  const phone = world.app.browser();
  const { csrfToken } = await signIn(laptop);
  await signIn(phone);
  const racing = await inFlightSession(world, phone);
  const store = createSessionStore(world.app.container.orm, world.app.container.prepared);
  return { world, laptop, phone, headers: csrfHeaders(csrfToken, WEB_ORIGIN), racing, store };
}

describe('a request racing the end of all sessions', () => {
  it('does not resurrect its session after disconnect', async (t) => {
    const { world, laptop, phone, headers, racing, store } = await twoDevices(t);
    assert.equal((await laptop.fetch('/auth/provider/disconnect', { method: 'POST', headers })).status, 204);
    // The phone's request, started before the disconnect, now saves its session, as koa-session does.
    await store.set(racing.key, { ...racing.data, csrfToken: 'changed-in-flight' }, SESSION_IDLE_MS);

    assert.deepEqual(
      await world.sql('select id from sessions where id = $1', [sha256hex(racing.key)]),
      [],
      'no row written back',
    );
    assert.equal((await sessionOf(phone)).authenticated, false);
    // Signing in again afterwards works: only sessions from before the disconnect are refused.
    await signIn(phone);
    assert.equal((await sessionOf(phone)).authenticated, true);
  });

  it('does not resurrect its session after account deletion, and fails nothing', async (t) => {
    const { world, laptop, phone, headers, racing, store } = await twoDevices(t);
    const res = await laptop.fetch('/auth/account', { method: 'DELETE', headers, json: { confirm: true } });
    assert.equal(res.status, 204);
    await store.set(racing.key, racing.data, SESSION_IDLE_MS);
    assert.deepEqual(await world.sql('select id from sessions'), []);
    assert.equal((await sessionOf(phone)).authenticated, false);
  });
});

describe('a request racing its own sign-out', () => {
  it('renews the session it read, but never writes back one signed out while it ran', async (t) => {
    const world = await authWorld(t);
    const phone = world.app.browser();
    await signIn(phone);
    const key = phone.cookies.get(SESSION_COOKIE)!;
    const id = sha256hex(key);
    const store = createSessionStore(world.app.container.orm, world.app.container.prepared);
    const expiry = async () =>
      (await world.sql<{ e: Date }>('select expires_at as e from sessions where id = $1', [id]))[0]?.e;
    const before = await expiry();
    // A request past the renewal point saves the session it read (koa-session passes its ctx).
    const renewing = {};
    const data = (await store.get(key, SESSION_IDLE_MS, { ctx: renewing }))!;
    await store.set(key, data, SESSION_IDLE_MS + 60_000, { ctx: renewing });
    assert.ok((await expiry())!.getTime() > before!.getTime(), 'renewed');

    const slow = {};
    const held = (await store.get(key, SESSION_IDLE_MS, { ctx: slow }))!;
    assert.equal((await phone.fetch('/auth/logout', { method: 'POST' })).status, 204);
    await store.set(key, { ...held, csrfToken: 'changed-in-flight' }, SESSION_IDLE_MS, { ctx: slow });
    assert.equal(await expiry(), undefined, 'the signed-out session is not re-created');
    assert.equal((await sessionOf(phone)).authenticated, false);
  });
});

describe('expired rows', () => {
  it('are purged by the scheduled purge job; live ones stay', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    await signIn(browser);
    await world.sql(
      `insert into sessions (id, account_id, data, expires_at) values ('expired-session', null, '{"email":"old@example.com"}', now() - interval '1 minute')`,
    );
    await world.sql(
      `insert into oauth_states (id, browser_hash, code_verifier, expires_at) values ('expired-state', 'b', 'v', now() - interval '1 minute'), ('live-state', 'b', 'v', now() + interval '5 minutes')`,
    );
    // Public page views past the retention go; recent ones stay.
    await world.sql(
      `insert into analytics_events (name, properties, created_at) values ('page_view', '{"path":"/old"}', now() - interval '${ANALYTICS_RETENTION_DAYS} days' - interval '1 minute'), ('page_view', '{"path":"/new"}', now() - interval '${ANALYTICS_RETENTION_DAYS - 1} days')`,
    );
    const purged = await world.app.container.liveInbox.scheduled['purge-expired']();
    assert.deepEqual(
      { ...purged, mailEvents: 0 },
      { sessions: 1, oauthStates: 1, analyticsEvents: 1, mailQuotaRows: 0, mailEvents: 0, mailListing: 0 },
    );
    assert.deepEqual(
      (await world.sql<{ path: string }>(`select properties->>'path' as path from analytics_events`)).map(
        (r) => r.path,
      ),
      ['/new'],
    );
    assert.deepEqual(
      (await world.sql<{ id: string }>('select id from oauth_states order by id')).map((r) => r.id),
      ['live-state'],
    );
    assert.deepEqual(await world.sql(`select id from sessions where id = 'expired-session'`), []);
    assert.equal((await sessionOf(browser)).authenticated, true, 'the live session stays');
  });
});
