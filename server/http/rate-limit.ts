/**
 * Per-client rate limits of spec part 8, counted in PostgreSQL with rate-limiter-flexible so
 * that every instance behind a load balancer shares them. Each route with its own limit has
 * its own bucket; every other route shares the configurable global bucket. If the database
 * is unreachable, an in-memory insurance limiter keeps limiting (per instance) meanwhile.
 */
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
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
