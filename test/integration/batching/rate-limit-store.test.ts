/**
 * The batched counter store against the unbatched one it replaces, on a real PostgreSQL:
 * concurrent requests of many clients and buckets, counted in one statement per batch, get
 * the answers they get counted one upsert at a time (positions, refusals, Retry-After); a
 * statement that fails fails its own batch only; and the statements are counted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { coalesced } from '../../../server/http/rate-limit.ts';
import { createCounterStore } from '../../../server/http/rate-limit-store.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';

const POINTS = 5;

/** A pool whose queries are counted, and whose next `failNext` statements fail as a dropped connection would. */
function countingPool(pool: pg.Pool) {
  const seen: string[] = [];
  let failNext = 0;
  const wrapped = {
    async connect() {
      const client = await pool.connect();
      return {
        query(q: string | pg.QueryConfig) {
          const text = typeof q === 'string' ? q : q.text;
          if (!/synchronous_commit/.test(text)) seen.push(text);
          if (failNext > 0 && !/synchronous_commit/.test(text)) {
            failNext--;
            return Promise.reject(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
          }
          return client.query(q as pg.QueryConfig);
        },
        release: (err?: Error) => client.release(err),
      };
    },
  };
  return { pool: wrapped as unknown as pg.Pool, seen, failNext: (n: number) => void (failNext = n) };
}

function limiterOver(storeClient: unknown, keyPrefix: string) {
  const limiter = new RateLimiterPostgres({
    storeClient,
    storeType: 'pool',
    tableName: 'rate_limits',
    tableCreated: true,
    keyPrefix,
    points: POINTS,
    duration: 60,
  });
  return coalesced(limiter, POINTS);
}

type Outcome = { ok: boolean; remaining: number; retryAfterSeconds: number } | { error: string };
const outcome = (p: Promise<RateLimiterRes>): Promise<Outcome> =>
  p.then(
    (r) => ({ ok: true, remaining: r.remainingPoints, retryAfterSeconds: 0 }),
    (e: unknown) =>
      e instanceof RateLimiterRes
        ? { ok: false, remaining: e.remainingPoints, retryAfterSeconds: Math.ceil(e.msBeforeNext / 1000) }
        : { error: (e as Error).message },
  );

/** Requests per client: 1..9, so some clients stay under the limit and some go over. */
const load = Array.from({ length: 40 }, (_, i) => ({ client: `10.0.${i}.1`, requests: (i % 9) + 1 }));

async function run(consume: (key: string) => Promise<RateLimiterRes>) {
  const results = await Promise.all(
    load.flatMap(({ client, requests }) =>
      Array.from({ length: requests }, () => outcome(consume(client)).then((o) => ({ client, o }))),
    ),
  );
  const byClient = new Map<string, Outcome[]>();
  for (const { client, o } of results) byClient.set(client, [...(byClient.get(client) ?? []), o]);
  // Within one client the order of concurrent requests is not fixed: compare the sorted answers.
  return new Map([...byClient].map(([c, list]) => [c, list.map((o) => JSON.stringify(o)).sort()]));
}

describe('batched rate-limit counting', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  before(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 5 });
    // An idle client's error comes to the pool: without a listener it is an uncaught exception.
    // The one expected here is the forced drop of the database at the end, ending a connection
    // a batch still in flight when the last test finished opened after the pool was drained.
    pool.on('error', (err: Error & { code?: string }) => {
      if (err.code !== '57P01') throw err;
    });
  });
  after(async () => {
    await pool.end();
    await db.drop();
  });

  it('answers exactly as one upsert per request would, in a handful of statements', async (t) => {
    const reference = countingPool(pool);
    const unbatched = await run(
      limiterOver(
        {
          query: (q: pg.QueryConfig) =>
            reference.pool.connect().then(async (c) => {
              try {
                return await c.query(q);
              } finally {
                c.release();
              }
            }),
        },
        'ref',
      ),
    );
    const batchedPool = countingPool(pool);
    const batched = await run(limiterOver(createCounterStore(batchedPool.pool), 'new'));
    // The same answers; Retry-After is checked on its own below: a refusal's is what is left of the
    // window, whole seconds rounded up, so one that comes more than a second after its window
    // opened (a loaded machine) says 59 where a quicker one says 60, in either store.
    const sameAnswers = (m: Map<string, string[]>) =>
      new Map(
        [...m].map(([c, list]) => [
          c,
          list.map((s) => s.replace(/"retryAfterSeconds":(59|60)\b/, '"retryAfterSeconds":"59-60"')).sort(),
        ]),
      );
    assert.deepEqual(sameAnswers(batched), sameAnswers(unbatched));
    const requests = load.reduce((n, l) => n + l.requests, 0);
    assert.equal(requests, 190);
    t.diagnostic(
      `${requests} requests of ${load.length} clients: ${reference.seen.length} statements unbatched, ${batchedPool.seen.length} batched`,
    );
    assert.ok(reference.seen.length >= 40, `unbatched: at least one upsert per client (${reference.seen.length})`);
    assert.ok(
      batchedPool.seen.length <= 12,
      `batched: a few statements for ${requests} requests (${batchedPool.seen.length})`,
    );
    // Over the limit: refused with the window's remaining time, never 0.
    for (const answers of [batched, unbatched]) {
      const refused = [...answers.values()]
        .flat()
        .map((s) => JSON.parse(s) as Outcome)
        .filter((o) => 'ok' in o && !o.ok);
      assert.equal(
        refused.length,
        load.reduce((n, l) => n + Math.max(0, l.requests - POINTS), 0),
      );
      for (const o of refused)
        assert.ok(
          'retryAfterSeconds' in o && o.retryAfterSeconds >= 59 && o.retryAfterSeconds <= 60,
          JSON.stringify(o),
        );
    }
  });

  it('keeps the counts in the database before answering: a second store (another instance) sees them', async () => {
    const a = limiterOver(createCounterStore(pool), 'shared');
    const b = limiterOver(createCounterStore(pool), 'shared');
    await Promise.all(Array.from({ length: 4 }, () => a('client-x')));
    const next = await outcome(b('client-x'));
    assert.deepEqual(next, { ok: true, remaining: 0, retryAfterSeconds: 0 });
    assert.deepEqual(await outcome(b('client-x')), { ok: false, remaining: 0, retryAfterSeconds: 60 });
  });

  it('fails only the batch whose statement failed', async () => {
    const faulty = countingPool(pool);
    const store = createCounterStore(faulty.pool);
    const consume = limiterOver(store, 'fault');
    faulty.failNext(1);
    const first = outcome(consume('client-1'));
    // Once the first statement has left (next tick), these form the next batch.
    await new Promise((r) => setImmediate(r));
    const second = Promise.all(['client-2', 'client-3'].map((k) => outcome(consume(k))));
    assert.deepEqual(await first, { error: 'connection reset' });
    assert.deepEqual(await second, [
      { ok: true, remaining: POINTS - 1, retryAfterSeconds: 0 },
      { ok: true, remaining: POINTS - 1, retryAfterSeconds: 0 },
    ]);
  });
});
