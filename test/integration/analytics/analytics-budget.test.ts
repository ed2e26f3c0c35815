/**
 * The anonymous analytics budget (ANALYTICS_ANONYMOUS_PER_MINUTE, docs/security.md
 * "Analytics"): under the worst case (many clients, each from a /64 of its own so each has
 * its own rate limit, posting page_views of the largest accepted size as fast as that limit
 * allows, to two instances on one database) the rows stored in a minute never pass the budget;
 * every event is still answered 200 `{ok: true}`, and each one dropped is counted in
 * mia_analytics_dropped_total{reason="budget"} of the instance that dropped it. The budget's
 * minute follows an injected clock, so the test moves it instead of waiting. An instance
 * whose clock lags adds to the newer minute's count instead of starting its own; an
 * instance sends one statement for concurrent events, and none once its minute is spent.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, type TestApp } from '../../helpers/app.ts';
import { createAnonymousEvents } from '../../../server/domain/analytics/anonymous-events.ts';
import type { RunPrepared } from '../../../server/domain/prepared-sql.ts';
import { sqlOf } from '../auth/auth-fixtures.ts';

const BUDGET = 50;
/** The route's limit per client (api-spec part 8): each client sends one more, refused. */
const PER_CLIENT = 60;
const CLIENTS = 16;
/** Any row stored stays under this many bytes (888 measured; what docs/security.md multiplies by the budget). */
const ROW_BYTES = 1_000;

/**
 * The largest path stored: 512 ASCII characters, varied so that nothing compresses them (wider
 * characters are cut at 512 bytes: test/unit/domain/analytics/page-view.test.ts).
 */
const URL_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~';
const WORST_PATH =
  '/' + Array.from({ length: 511 }, (_, i) => URL_SAFE[(i * 7919 + (i >> 3)) % URL_SAFE.length]).join('');
const LONGEST_HOST = Array.from({ length: 4 }, (_, i) => 'abcd'[i]!.repeat(63))
  .join('.')
  .slice(0, 253);
const WORST_REFERRER = `https://${LONGEST_HOST}:65535/`.padEnd(2048, 'r');

const dropped = async (app: TestApp) => {
  const metric = await app.container.metrics.registry.getSingleMetric('mia_analytics_dropped_total')!.get();
  return metric.values.find((v) => v.labels.reason === 'budget')?.value ?? 0;
};

/** Each client (its own /64) posts page_views until the rate limit refuses one, alternating instances; the statuses. */
async function flood(apps: TestApp[], firstClient: number, clients: number): Promise<number[]> {
  const send = (client: number, i: number) =>
    fetch(`${apps[i % apps.length]!.url}/api/analytics/event`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Forwarded-For': `2001:db8:0:${client.toString(16)}::${(i + 1).toString(16)}`,
      },
      body: JSON.stringify({
        event: 'page_view',
        anonymousId: crypto.randomUUID(),
        properties: { path: WORST_PATH, referrer: WORST_REFERRER },
      }),
    }).then(async (res) => {
      const body = await res.json();
      if (res.status === 200) assert.deepEqual(body, { ok: true });
      return res.status;
    });
  // The address's last 64 bits vary per request: the /64 is the client.
  const perClient = (client: number) => Promise.all(Array.from({ length: PER_CLIENT + 1 }, (_, i) => send(client, i)));
  return (await Promise.all(Array.from({ length: clients }, (_, c) => perClient(firstClient + c)))).flat();
}

describe("anonymous analytics within the deployment's budget per minute", () => {
  it('many /64s at the rate limit on two instances: rows stored per minute ≤ the budget, the rest accepted and counted', async (t) => {
    let now = new Date('2026-12-02T10:00:05.000Z');
    const overrides = { analytics: { now: () => now } };
    const env = { TRUST_PROXY: 'true', ANALYTICS_ANONYMOUS_PER_MINUTE: String(BUDGET) };
    const a = await buildTestApp(t, { env, overrides });
    const b = await buildTestApp(t, { env, overrides, databaseUrl: a.databaseUrl });
    const sql = sqlOf(a);
    const rows = async () => (await sql<{ n: number }>('select count(*)::int as n from analytics_events'))[0]!.n;

    const first = await flood([a, b], 1, CLIENTS);
    assert.equal(
      first.filter((s) => s === 200).length,
      CLIENTS * PER_CLIENT,
      'every event within the rate limit is accepted',
    );
    assert.equal(first.filter((s) => s === 429).length, CLIENTS, 'each client reached its rate limit');
    const attempted = CLIENTS * PER_CLIENT;
    assert.ok(attempted > 10 * BUDGET, 'the demand is far past the budget');
    // Exactly the budget: never more, and not less either (the count loses nothing).
    assert.equal(await rows(), BUDGET);
    assert.equal(
      (await dropped(a)) + (await dropped(b)),
      attempted - BUDGET,
      'each drop counted by the instance that dropped it',
    );
    assert.ok((await dropped(a)) > 0 && (await dropped(b)) > 0, 'both instances took part');

    // What a row holds and weighs at worst: the path whole, the referrer as its origin.
    const [row] = await sql<{ path: string; referrer: string; bytes: number }>(
      `select properties->>'path' as path, properties->>'referrer' as referrer, max(pg_column_size(t.*)) over () as bytes from analytics_events t limit 1`,
    );
    assert.equal(row!.path, WORST_PATH);
    assert.equal(row!.referrer, `https://${LONGEST_HOST}:65535`);
    assert.ok(row!.bytes < ROW_BYTES, `a row of ${row!.bytes} bytes`);

    // The next minute has a budget of its own, and no more (new clients: the first ones are still limited).
    now = new Date(now.getTime() + 60_000);
    const second = await flood([a, b], 1 + CLIENTS, 2);
    assert.equal(second.filter((s) => s === 200).length, 2 * PER_CLIENT);
    assert.ok(2 * PER_CLIENT > BUDGET);
    assert.equal(await rows(), 2 * BUDGET);
  });

  it("an instance whose clock lags a minute adds to the newer minute's count: no second budget", async (t) => {
    const app = await buildTestApp(t);
    const sql = sqlOf(app);
    const minute = Date.parse('2026-12-02T10:00:00.000Z');
    const ahead = createAnonymousEvents({
      prepared: app.container.prepared,
      perMinute: BUDGET,
      now: () => new Date(minute + 60_000),
    });
    const behind = createAnonymousEvents({
      prepared: app.container.prepared,
      perMinute: BUDGET,
      now: () => new Date(minute + 59_000),
    });
    const event = (path: string) => ({ name: 'page_view', anonymousId: null, properties: { path } });
    const aheadStored = await Promise.all(Array.from({ length: BUDGET - 10 }, () => ahead.record(event('/ahead'))));
    const behindStored = await Promise.all(Array.from({ length: BUDGET }, () => behind.record(event('/behind'))));
    assert.ok(aheadStored.every(Boolean));
    assert.equal(behindStored.filter(Boolean).length, 10, 'the lagging instance had what was left of the newer minute');
    const [{ n }] = await sql<{ n: number }>('select count(*)::int as n from analytics_events');
    assert.equal(n, BUDGET);
    assert.deepEqual(await sql('select scope, minute::text, events from analytics_budget'), [
      { scope: 'anonymous', minute: String(minute / 60_000 + 1), events: 2 * BUDGET - 10 },
    ]);
  });

  it('cheap under a flood: concurrent events share a statement, and past the budget none is sent', async (t) => {
    const app = await buildTestApp(t);
    let statements = 0;
    const prepared: RunPrepared = (statement, values) => (statements++, app.container.prepared(statement, values));
    let now = new Date('2026-12-02T10:00:00.000Z');
    const events = createAnonymousEvents({ prepared, perMinute: BUDGET, now: () => now });
    const event = { name: 'page_view', anonymousId: null, properties: { path: '/' } };
    const burst = await Promise.all(Array.from({ length: 4 * BUDGET }, () => events.record(event)));
    assert.equal(burst.filter(Boolean).length, BUDGET);
    assert.ok(statements <= 2, `${statements} statements for ${4 * BUDGET} concurrent events`);
    const sent = statements;
    for (let i = 0; i < 20; i++) assert.equal(await events.record(event), false);
    assert.equal(statements, sent, 'the minute is known to be spent: no statement');
    now = new Date(now.getTime() + 60_000);
    assert.equal(await events.record(event), true, 'the next minute stores again');
    assert.equal(statements, sent + 1);
  });
});
