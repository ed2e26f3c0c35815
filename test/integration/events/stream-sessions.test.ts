/**
 * Streams end with their session, on every instance, whether or not a notification said so:
 * each instance checks its streams' sessions in one statement on its heartbeat and after its
 * LISTEN connection came back (idle and absolute expiry, the purge, a new sign-in, a logout
 * whose notification was lost); and the cap on one instance's open streams.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { buildTestApp, type TestApp } from '../../helpers/app.ts';
import { signIn, startProviders } from '../../helpers/providers.ts';
import type { StreamLimits } from '../../../server/domain/events/events.service.ts';
import { SESSION_ABSOLUTE_MS } from '../../../server/http/sessions.ts';
import { CONNECTIONS_BEYOND_STREAMS } from '../../../server/http/listen.ts';
import { purgeExpired } from '../../../server/domain/auth/purge-expired.ts';
import { openSse, type SseReader } from './sse-reader.ts';

/** A beats every 100 ms; B (unless told) only after a minute, so on B only what a test triggers checks the sessions. */
async function twoInstances(t: TestContext, limitsB: Partial<StreamLimits> = {}, envA: Record<string, string> = {}) {
  const providers = await startProviders(t);
  // Both instances read the same sessions: same cookie keys, same token key.
  const env = {
    ...providers.env,
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
  const base = { perSession: 5, perAccount: 20, retryAfterSeconds: 30 };
  const a = await buildTestApp(t, {
    env: { ...env, ...envA },
    overrides: { streamLimits: { ...base, heartbeatMs: 100 } },
  });
  const b = await buildTestApp(t, {
    env,
    databaseUrl: a.databaseUrl,
    overrides: { streamLimits: { ...base, heartbeatMs: 60_000, ...limitsB } },
  });
  const sql = async <T>(query: string, params: unknown[] = []) =>
    (await a.container.orm.em.fork().execute(query, params)) as T[];
  /** A signed-in session of the one account (each browser signs in as the same person). */
  const session = async () => {
    const browser = a.browser();
    const { csrfToken } = await signIn(browser);
    return { browser, csrfToken, headers: { Cookie: browser.cookieHeader() } };
  };
  return { a, b, sql, session };
}

/** Opens a stream that must be accepted, and reads its first event. */
async function opened(
  app: TestApp,
  headers: Record<string, string>,
  t: TestContext,
  path = '/api/mail/events',
): Promise<SseReader> {
  const s = await openSse(`${app.url}${path}`, headers);
  t.after(() => s.close());
  assert.equal(s.res.status, 200);
  assert.equal((await s.next((e) => e.json?.type === 'sync')).json.type, 'sync');
  return s;
}

/** Waits for a state the servers reach on their own (a statement committed), checking on each turn. */
async function until(ok: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await ok())) await new Promise((r) => setImmediate(r));
}

const openKeys = (app: TestApp) => app.container.liveEvents.sessions().length;

describe('event streams end with their session', () => {
  it('idle and absolute expiry end the streams on the heartbeat; live sessions keep theirs', async (t) => {
    const { a, b, sql, session } = await twoInstances(t);
    const [idle, old, live] = [await session(), await session(), await session()];
    const idleOnA = await opened(a, idle.headers, t);
    const oldOnA = await opened(a, old.headers, t);
    await opened(a, live.headers, t);
    await opened(b, live.headers, t);

    // The idle lifetime ran out (koa-session moves expires_at on with each use; nothing used this one).
    await sql(`update sessions set expires_at = now() - interval '1 second' where data->>'csrfToken' = ?`, [
      idle.csrfToken,
    ]);
    await idleOnA.ended;
    // Signed in longer ago than the absolute lifetime, though used recently.
    await sql(
      `update sessions set data = jsonb_set(data, '{signedInAt}', to_jsonb((extract(epoch from now()) * 1000)::bigint - ?::bigint)) where data->>'csrfToken' = ?`,
      [SESSION_ABSOLUTE_MS + 60_000, old.csrfToken],
    );
    await oldOnA.ended;
    assert.equal(
      (await fetch(`${a.url}/api/mail/events`, { headers: old.headers })).status,
      401,
      'the session is over for requests too',
    );

    // A live session's streams stay open through the checks (the statement derives the stream key as the server does).
    await a.container.services.events.checkSessions();
    await b.container.services.events.checkSessions();
    assert.deepEqual([openKeys(a), openKeys(b)], [1, 1]);
    assert.deepEqual(a.container.liveEvents.sessions(), b.container.liveEvents.sessions(), 'the live session, on both');
    await until(() => a.container.liveEvents.size() === 1);
  });

  it('the purge and a new sign-in end the streams on another instance at its next check', async (t) => {
    const { a, b, sql, session } = await twoInstances(t);
    const [expired, again] = [await session(), await session()];
    const expiredOnB = await opened(b, expired.headers, t);
    const oldCookie = again.headers;
    const replacedOnB = await opened(b, oldCookie, t);

    await sql(`update sessions set expires_at = now() - interval '1 second' where data->>'csrfToken' = ?`, [
      expired.csrfToken,
    ]);
    const purged = await purgeExpired(a.container.orm.em.fork());
    assert.equal(purged.sessions, 1);
    // Signing in again in the same browser replaces its session (a new key, the old row removed).
    const renewed = await signIn(again.browser);
    assert.notEqual(renewed.csrfToken, again.csrfToken);
    // B's heartbeat is a minute away: its check, as the heartbeat runs it.
    await b.container.services.events.checkSessions();
    await Promise.all([expiredOnB.ended, replacedOnB.ended]);
    // The new session streams.
    await opened(b, { Cookie: again.browser.cookieHeader() }, t, '/trpc/mail.events');
    assert.equal((await fetch(`${b.url}/api/mail/events`, { headers: oldCookie })).status, 401);
  });

  it('a logout whose notification was lost (while B was not listening) ends the stream when B listens again', async (t) => {
    const { b, sql, session } = await twoInstances(t);
    const gone = await session();
    const kept = await session();
    const goneOnB = await opened(b, gone.headers, t);
    const keptOnB = await opened(b, kept.headers, t);
    // What a logout does to the row, its notification lost: only B's reconnect can tell (its heartbeat is a minute away).
    await sql(`delete from sessions where data->>'csrfToken' = ?`, [gone.csrfToken]);
    await sql(
      'select pg_terminate_backend(pid) from pg_stat_activity where application_name = ? and datname = current_database()',
      ['mia-listen mia_mail_events'],
    );
    await goneOnB.ended;
    // The other session's stream is reset (events may have been missed) and stays open.
    assert.equal((await keptOnB.next()).json.type, 'reset');
    await until(() => b.container.liveEvents.size() === 1);
    assert.equal(openKeys(b), 1);
  });

  it('a logout while B reconnects ends the stream by the notification or, if lost, by the check', async (t) => {
    const { a, b, session } = await twoInstances(t, { heartbeatMs: 150 });
    const user = await session();
    const onB = await opened(b, user.headers, t);
    await a.container.orm.em
      .fork()
      .execute(
        'select pg_terminate_backend(pid) from pg_stat_activity where application_name = ? and datname = current_database()',
        ['mia-listen mia_mail_events'],
      );
    assert.equal((await user.browser.fetch('/auth/logout', { method: 'POST' })).status, 204);
    await onB.ended;
  });
});

describe('open streams per instance', () => {
  it('past EVENT_STREAMS_PER_INSTANCE a new stream is 503 with Retry-After (REST and tRPC); a closed one frees a place', async (t) => {
    const { a, b, session } = await twoInstances(t, {}, { EVENT_STREAMS_PER_INSTANCE: '2' });
    assert.equal(a.config.eventStreamsPerInstance, 2);
    assert.equal(a.server.maxConnections, 2 + CONNECTIONS_BEYOND_STREAMS);
    const [one, two] = [await session(), await session()];
    const first = await opened(a, one.headers, t);
    await opened(a, two.headers, t, '/trpc/mail.events');

    const full = await fetch(`${a.url}/api/mail/events`, { headers: two.headers });
    assert.equal(full.status, 503);
    assert.equal(full.headers.get('retry-after'), '5');
    assert.equal((await full.json()).error.code, 'SERVICE_UNAVAILABLE');
    const fullTrpc = await openSse(`${a.url}/trpc/mail.events`, one.headers);
    t.after(() => fullTrpc.close());
    assert.equal((await fullTrpc.next((e) => e.event === 'serialized-error')).json.data.appCode, 'SERVICE_UNAVAILABLE');
    // The cap is the instance's own: B (its default cap) serves the same session.
    await opened(b, one.headers, t);

    first.close();
    await first.ended;
    await until(() => a.container.liveEvents.size() === 1);
    await opened(a, one.headers, t);
  });
});
