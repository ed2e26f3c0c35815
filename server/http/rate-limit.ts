/**
 * Per-client rate limits of spec part 8, counted in PostgreSQL with rate-limiter-flexible so
 * that every instance behind a load balancer shares them. Each route with its own limit has
 * its own bucket; every other route shares the configurable global bucket. If the database
 * is unreachable, an in-memory insurance limiter keeps limiting (per instance) meanwhile.
 */
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type Koa from 'koa';
import type pg from 'pg';
import { AppError } from '../domain/errors.ts';

export const FIXED_BUCKETS = {
  'auth.provider': 20,
  'auth.callback': 20,
  'auth.disconnect': 20,
  'auth.deleteAccount': 20,
  'mail.sync': 10,
  'mail.analyze': 20,
  'mail.draft': 20,
  'settings.update': 20,
  'analytics.event': 60,
} as const;
const FIXED_WINDOW_SECONDS = 60;

export type BucketName = keyof typeof FIXED_BUCKETS | 'global';

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

export function createRateLimits(opts: { pool: pg.Pool; global: { max: number; windowSeconds: number } }): RateLimits {
  const limiters = new Map<BucketName, { limit: number; limiter: RateLimiterPostgres }>();
  const make = (name: BucketName, points: number, duration: number) => {
    const limiter = new RateLimiterPostgres({
      storeClient: opts.pool,
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
    limiters.set(name, { limit: points, limiter });
  };
  make('global', opts.global.max, opts.global.windowSeconds);
  for (const [name, points] of Object.entries(FIXED_BUCKETS)) make(name as BucketName, points, FIXED_WINDOW_SECONDS);

  return {
    limitOf: (bucket) => limiters.get(bucket)!.limit,
    async consume(bucket, client) {
      const entry = limiters.get(bucket)!;
      try {
        const res = await entry.limiter.consume(client);
        return { limit: entry.limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
      } catch (err) {
        if (err instanceof RateLimiterRes) {
          throw new AppError('RATE_LIMITED', { retryAfter: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) });
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
      ctx.set({ 'RateLimit-Limit': String(limits.limitOf(bucket)), 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(err.retryAfter ?? 1) });
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
export function countRefused(limits: RateLimits, bucketOf: (procedurePath: string) => BucketName | undefined): Koa.Middleware {
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
        if (ctx.path.startsWith('/trpc/')) {
          // The typed client expects a tRPC-shaped error on /trpc.
          ctx.status = 429;
          ctx.set('Retry-After', String((err as AppError).retryAfter ?? 1));
          ctx.type = 'application/json';
          ctx.body = { error: { code: -32029, message: 'Too many requests; please retry later.', data: { appCode: 'RATE_LIMITED', requestId: ctx.state.requestId, httpStatus: 429 } } };
          return;
        }
      }
    }
    if (failure) throw failure;
  };
}
