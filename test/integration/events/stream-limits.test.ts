/**
 * The stream limits across instances sharing one database: every open stream holds a row of
 * `event_streams`, so 5 per session and 20 per account hold over the cluster, a closed stream
 * frees its place on the other instance, an instance that stops beating (crashed, frozen) has
 * its places lapse, and a stopping instance frees all of its places at once.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { buildTestApp, type TestApp } from '../../helpers/app.ts';
import { signIn, startProviders } from '../../helpers/providers.ts';
import type { StreamLimits } from '../../../server/domain/events/events.service.ts';
import { openSse, type SseReader } from './sse-reader.ts';

async function twoInstances(t: TestContext, limitsA?: StreamLimits, limitsB?: StreamLimits) {
  const providers = await startProviders(t);
  // Both instances read the same sessions: same cookie keys, same token key.
  const env = {
    ...providers.env,
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
  const a = await buildTestApp(t, { env, overrides: limitsA ? { streamLimits: limitsA } : {} });
  const b = await buildTestApp(t, {
    env,
    databaseUrl: a.databaseUrl,
    overrides: limitsB ? { streamLimits: limitsB } : {},
  });
  const sql = async <T>(query: string, params: unknown[] = []) =>
    (await a.container.orm.em.fork().execute(query, params)) as T[];
  /** A signed-in session of the one account (each browser signs in as the same person). */
  const session = async () => {
    const browser = a.browser();
    await signIn(browser);
    return { Cookie: browser.cookieHeader() };
  };
  return { a, b, sql, session };
}

/** Opens a stream that must be accepted, and reads its first event. */
async function opened(app: TestApp, headers: Record<string, string>, t: TestContext): Promise<SseReader> {
  const s = await openSse(`${app.url}/api/mail/events`, headers);
  t.after(() => s.close());
  assert.equal(s.res.status, 200);
  assert.equal((await s.next()).json.type, 'sync');
  return s;
}

async function refused(app: TestApp, headers: Record<string, string>): Promise<Response> {
  const res = await fetch(`${app.url}/api/mail/events`, { headers });
  assert.equal(res.status, 429);
  assert.equal((await res.json()).error.code, 'RATE_LIMITED');
  return res;
}

/** Waits for a state the servers reach on their own (a statement committed, a row lapsed), checking on each turn. */
async function until(ok: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await ok())) await new Promise((r) => setImmediate(r));
}

describe('stream limits across instances', () => {
  it('20 streams of an account over two instances: the 21st is refused on either; a closed one frees its place on the other', async (t) => {
    const { a, b, sql, session } = await twoInstances(t);
    const sessions = [await session(), await session(), await session(), await session()];
    const streams: SseReader[][] = [];
    for (const cookie of sessions) {
      const own: SseReader[] = [];
      for (let i = 0; i < 5; i++) own.push(await opened(i % 2 ? b : a, cookie, t));
      streams.push(own);
    }
    assert.equal(a.container.liveEvents.size(), 12);
    assert.equal(b.container.liveEvents.size(), 8);
    assert.deepEqual(await sql('select count(*)::int as n from event_streams'), [{ n: 20 }]);

    // A session with 3 on A and 2 on B: its 6th is refused on B too (B alone holds 2 of it).
    await refused(b, sessions[0]!);
    // A fifth session: the account holds 20, refused on both.
    const fifth = await session();
    assert.equal((await refused(a, fifth)).headers.get('retry-after'), '30');
    await refused(b, fifth);

    // A stream closed on B frees a place that A gives out.
    const onB = streams[1]![1]!;
    onB.close();
    await onB.ended;
    await until(async () => (await sql<{ n: number }>('select count(*)::int as n from event_streams'))[0]!.n === 19);
    await opened(a, fifth, t);
    await refused(b, fifth);

    // B stops (SIGTERM): its streams end and its places are freed at once, in one statement.
    await b.container.liveEvents.stop();
    await Promise.all(streams.flatMap((own) => own.filter((_, i) => i % 2 === 1)).map((s) => s.ended));
    assert.deepEqual(await sql('select count(*)::int as n from event_streams'), [{ n: 13 }]);
    const last = await opened(a, fifth, t);

    // Every stream of A dropped at once (a proxy restarting): their places are freed together, none left behind.
    const onA = [...streams.flatMap((own) => own.filter((_, i) => i % 2 === 0)), last];
    for (const s of onA) s.close();
    await until(() => a.container.liveEvents.size() === 1);
    assert.deepEqual(
      await sql('select count(*)::int as n from event_streams'),
      [{ n: 1 }],
      'the one stream still open',
    );
  });

  it('an instance that stops beating has its places lapse; a live one keeps its own with the heartbeat', async (t) => {
    const limits = { perSession: 5, perAccount: 3, retryAfterSeconds: 7, slotTtlMs: 1_500 };
    // A beats every 100 ms; B would beat only after a minute: as far as the others know, it is gone.
    const { a, b, sql, session } = await twoInstances(
      t,
      { ...limits, heartbeatMs: 100 },
      { ...limits, heartbeatMs: 60_000 },
    );
    const [ofA, ofB] = [await session(), await session()];
    await opened(a, ofA, t);
    await opened(b, ofB, t);
    await opened(b, ofB, t);
    assert.equal((await refused(a, ofA)).headers.get('retry-after'), '7');
    const liveSessions = async () =>
      (await sql<{ session_key: string }>('select session_key from event_streams where expires_at > now()')).map(
        (r) => r.session_key,
      );
    // A's row was taken first, so without its heartbeat it would lapse first: it is the one left once B's have lapsed.
    const [ofARow] = await sql<{ session_key: string }>(
      'select session_key from event_streams group by session_key having count(*) = 1',
    );
    await until(async () => (await liveSessions()).every((key) => key === ofARow!.session_key));
    assert.deepEqual(await liveSessions(), [ofARow!.session_key]);

    // B's places no longer count: A gives out two more (the lapsed rows are swept as it does).
    await opened(a, ofA, t);
    await opened(a, ofA, t);
    assert.deepEqual(await sql('select count(*)::int as n from event_streams'), [{ n: 3 }]);
    await refused(a, ofB);
  });
});
