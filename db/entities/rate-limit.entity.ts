/** Counters of rate-limiter-flexible's PostgreSQL store (its table shape), shared by every instance. */
import { defineEntity, p } from '@mikro-orm/core';

export const RateLimitSchema = defineEntity({
  name: 'RateLimit',
  tableName: 'rate_limits',
  properties: {
    key: p.string().length(255).primary(),
    points: p.integer().default(0),
    expire: p.bigint('number').nullable().index(),
  },
});
export class RateLimit extends RateLimitSchema.class {}
RateLimitSchema.setClass(RateLimit);
