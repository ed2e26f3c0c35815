/**
 * The PostgreSQL client rate-limiter-flexible counts through. Its per-key upserts of
 * concurrent requests, whichever clients and buckets they count, are sent as one statement
 * (oneInFlightLoader): the rows are upserted together, each with the same rule as the
 * library's own statement (a new window restarts the count, else the points add up), and
 * each caller gets its own row back before its answer. So every count is in the database
 * before the request is answered, and every instance sees every count at once. A key twice
 * in a batch (the limiter's own coalescing prevents it; a guard all the same) goes into a
 * second statement, as ON CONFLICT cannot update a row twice in one. A statement that fails
 * fails its batch only.
 *
 * Counters commit without waiting for the disk: each connection, before its first counter,
 * is switched to synchronous_commit = off (a crash can forget the last fraction of a second
 * of counts, which only ever lets a few more requests through).
 */
import type pg from 'pg';
import { oneInFlightLoader } from '../infra/batch-loader.ts';

/** rate-limiter-flexible's upsert, named `<table>:rlflx-upsert`: values [key, points, newExpire, now]. */
const UPSERT_NAME = /:rlflx-upsert$/;

const BATCH_UPSERT = `insert into rate_limits as r (key, points, expire)
  select * from unnest($1::varchar[], $2::int[], $3::bigint[])
  on conflict (key) do update set
    points = case when r.expire <= $4::bigint then excluded.points else r.points + excluded.points end,
    expire = case when r.expire <= $4::bigint then excluded.expire else r.expire end
  returning key, points, expire`;

type Row = { key: string; points: number; expire: string | null };

export interface CounterStore {
  query(q: pg.QueryConfig): Promise<{ rows: unknown[] }>;
}

export function createCounterStore(pool: pg.Pool): CounterStore {
  const asynchronous = new WeakSet<pg.PoolClient>();
  const send = async (q: pg.QueryConfig) => {
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      if (!asynchronous.has(client)) {
        await client.query('set synchronous_commit = off');
        asynchronous.add(client);
      }
      return await client.query(q);
    } catch (err) {
      if (!(err as { code?: string }).code) broken = err as Error;
      throw err;
    } finally {
      client.release(broken);
    }
  };

  const upserts = oneInFlightLoader<pg.QueryConfig, { rows: Row[] }>(async (queries) => {
    const results: { rows: Row[] }[] = new Array(queries.length);
    let pending = queries.map((q, i) => ({ values: q.values as [string, number, number | null, number], i }));
    while (pending.length) {
      const seen = new Set<string>();
      const round = pending.filter((p) => !seen.has(p.values[0]) && seen.add(p.values[0]));
      pending = pending.filter((p) => !round.includes(p));
      const now = Math.max(...round.map((p) => p.values[3]));
      const { rows } = await send({
        name: 'mia-rate-limit-upsert',
        text: BATCH_UPSERT,
        values: [round.map((p) => p.values[0]), round.map((p) => p.values[1]), round.map((p) => p.values[2]), now],
      });
      const byKey = new Map((rows as Row[]).map((r) => [r.key, r]));
      for (const p of round) results[p.i] = { rows: [byKey.get(p.values[0])!] };
    }
    return results;
  });

  return {
    query: (q) => (q.name && UPSERT_NAME.test(q.name) ? upserts.load(q) : send(q)),
  };
}
