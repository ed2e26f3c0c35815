/**
 * Per-client rate limits of spec part 8, counted in PostgreSQL with rate-limiter-flexible so
 * that every instance behind a load balancer shares them. Each route with its own limit has
 * its own bucket; every other route shares the configurable global bucket. If the database
 * is unreachable, an in-memory insurance limiter keeps limiting (per instance) meanwhile.
 *
 * Cost per request: a share of one upsert. Requests of the same client that arrive while its
 * upsert is in flight are counted together by the next one (see `coalesced`), with the same
 * answers as one upsert each; the upserts of all clients in flight together go as one
 * statement (rate-limit-store.ts). Counts are never cached: every instance sees every count
 * at once.
 */
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type Koa from 'koa';
import type pg from 'pg';
import { AppError, retryAfterFor } from '../domain/errors.ts';
import { FIXED_BUCKETS, FIXED_WINDOW_SECONDS, type BucketName } from '../domain/rate-limit-buckets.ts';
import { createCounterStore } from './rate-limit-store.ts';

export { FIXED_BUCKETS, type BucketName } from '../domain/rate-limit-buckets.ts';

export interface RateLimitOutcome {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

export interface RateLimits {
  /** Counts one request of `client` against `bucket`; throws RATE_LIMITED when over. */
  consume(bucket: BucketName, client: string): Promise<RateLimitOutcome>;
  limitOf(bucket: BucketName): number;
}

type Consume = (client: string) => Promise<RateLimiterRes>;

/**
 * Counts concurrent requests of one client in one upsert: the first goes alone; those that
 * arrive while it is in flight wait and are counted together by the next `consume(key, n)`
 * (they would otherwise queue on the same row lock, one upsert each). Each waiter gets the
 * answer it would have got alone: its own position in the count decides whether it is
 * within the limit, and its remaining points. A batch refused from memory (the key is
 * blocked) refuses every waiter; a failure fails every waiter.
 */
export function coalesced(
  limiter: { consume(key: string, points: number): Promise<RateLimiterRes> },
  points: number,
): Consume {
  interface Waiter {
    resolve(r: RateLimiterRes): void;
    reject(err: unknown): void;
  }
  /** Keys with an upsert in flight, and the requests waiting for the next one. */
  const waiting = new Map<string, Waiter[]>();

  const settle = (batch: Waiter[], outcome: unknown, accepted: boolean) => {
    if (!(outcome instanceof RateLimiterRes)) {
      for (const w of batch) w.reject(outcome);
      return;
    }
    const n = batch.length;
    if (!accepted && outcome.consumedPoints < n) {
      // Refused without a count (blocked in memory until the window ends).
      for (const w of batch) w.reject(outcome);
      return;
    }
    batch.forEach((w, i) => {
      const position = outcome.consumedPoints - n + i + 1;
      const res = new RateLimiterRes(
        Math.max(0, points - position),
        outcome.msBeforeNext,
        position,
        outcome.isFirstInDuration && i === 0,
      );
      if (position > points) w.reject(res);
      else w.resolve(res);
    });
  };

  /** The limiter's count as a promise, even should it throw (the key must not stay busy forever). */
  const count = (key: string, n: number): Promise<RateLimiterRes> => {
    try {
      return limiter.consume(key, n);
    } catch (err) {
      return Promise.reject(err);
    }
  };

  const next = (key: string) => {
    const batch = waiting.get(key)!;
    if (!batch.length) {
      waiting.delete(key);
      return;
    }
    waiting.set(key, []);
    count(key, batch.length)
      .then(
        (res) => settle(batch, res, true),
        (err: unknown) => settle(batch, err, false),
      )
      .finally(() => next(key));
  };

  return (key) => {
    const queue = waiting.get(key);
    if (queue) return new Promise<RateLimiterRes>((resolve, reject) => queue.push({ resolve, reject }));
    waiting.set(key, []);
    const alone = count(key, 1);
    alone.then(
      () => next(key),
      () => next(key),
    );
    return alone;
  };
}

export function createRateLimits(opts: { pool: pg.Pool; global: { max: number; windowSeconds: number } }): RateLimits {
  const store = createCounterStore(opts.pool);
  const limiters = new Map<BucketName, { limit: number; consume: Consume }>();
  const make = (name: BucketName, points: number, duration: number) => {
    const limiter = new RateLimiterPostgres({
      storeClient: store,
      storeType: 'pool',
      tableName: 'rate_limits',
      tableCreated: true,
      keyPrefix: name,
      points,
      duration,
      // Once a client is over the limit, refuse it from memory until the window ends.
      inMemoryBlockOnConsumed: points,
      insuranceLimiter: new RateLimiterMemory({ keyPrefix: name, points, duration }),
    });
    limiters.set(name, { limit: points, consume: coalesced(limiter, points) });
  };
  make('global', opts.global.max, opts.global.windowSeconds);
  for (const [name, points] of Object.entries(FIXED_BUCKETS)) make(name as BucketName, points, FIXED_WINDOW_SECONDS);

  return {
    limitOf: (bucket) => limiters.get(bucket)!.limit,
    async consume(bucket, client) {
      const entry = limiters.get(bucket)!;
      try {
        const res = await entry.consume(client);
        return { limit: entry.limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
      } catch (err) {
        if (err instanceof RateLimiterRes) {
          throw new AppError('RATE_LIMITED', { retryAfter: err.msBeforeNext / 1000 });
        }
        throw err;
      }
    },
  };
}

/** The standard RateLimit-* response headers for an outcome. */
export function rateLimitHeaders(o: RateLimitOutcome): Record<string, string> {
  return {
    'RateLimit-Limit': String(o.limit),
    'RateLimit-Remaining': String(Math.max(0, o.remaining)),
    'RateLimit-Reset': String(Math.max(0, o.resetSeconds)),
  };
}

/**
 * Counts the request against `bucket`, sets the RateLimit-* headers (also on refusal) and
 * marks the request as counted, so that nothing counts it twice.
 */
export async function consumeFor(ctx: Koa.Context, limits: RateLimits, bucket: BucketName): Promise<void> {
  ctx.state.rateLimited = true;
  try {
    ctx.set(rateLimitHeaders(await limits.consume(bucket, ctx.state.clientIp)));
  } catch (err) {
    if (err instanceof AppError && err.code === 'RATE_LIMITED') {
      ctx.set({
        'RateLimit-Limit': String(limits.limitOf(bucket)),
        'RateLimit-Remaining': '0',
        'RateLimit-Reset': String(retryAfterFor(err)),
      });
    }
    throw err;
  }
}

/**
 * Every request counts, refused ones included: a request that was answered without passing
 * a rate-limited route or procedure (malformed body, unknown route or procedure, wrong
 * content type) is counted afterwards, against its procedure's bucket when known, else the
 * global one; if that puts it over the limit, the answer becomes RATE_LIMITED.
 */
export function countRefused(
  limits: RateLimits,
  bucketOf: (procedurePath: string) => BucketName | undefined,
): Koa.Middleware {
  return async (ctx, next) => {
    let failure: unknown;
    try {
      await next();
    } catch (err) {
      failure = err;
    }
    if (!ctx.state.rateLimited && ctx.method !== 'OPTIONS') {
      const path = typeof ctx.state.procedurePath === 'string' ? ctx.state.procedurePath : undefined;
      try {
        await consumeFor(ctx, limits, (path && bucketOf(path)) || 'global');
      } catch (err) {
        failure = err;
      }
    }
    if (failure) throw failure;
  };
}
