/**
 * The Koa adapter of the procedure context: the session behind the request's cookie, the
 * client's rate limit and its bearer credential, over createContextInner. Used by the REST
 * mount, the /trpc mount and the DELETE /auth/account route alike.
 */
import type Koa from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../infra/logger.ts';
import type { Services } from '../services.ts';
import { createContextInner, type Context } from '../trpc/context.ts';
import { consumeFor, type RateLimits } from './rate-limit.ts';
import type { Sessions } from './sessions.ts';

export interface RequestContextDeps {
  services: Services;
  sessions: Sessions;
  rateLimits: RateLimits;
  orm: MikroORM;
  log: Logger;
}

export function requestContext(koa: Koa.Context, deps: RequestContextDeps): Context {
  const { sessions } = deps;
  const authorization = koa.get('Authorization');
  return createContextInner({
    services: deps.services,
    em: () => deps.orm.em.fork(),
    requestId: koa.state.requestId,
    log: koa.state.log ?? deps.log,
    session: {
      currentUser: () => sessions.currentUser(koa),
      csrfValid: () => sessions.csrfValid(koa),
      csrfToken: () => sessions.csrfToken(koa),
      signOut: () => sessions.signOut(koa),
    },
    rateLimit: (bucket) => consumeFor(koa, deps.rateLimits, bucket),
    bearerToken: authorization.startsWith('Bearer ') ? authorization.slice(7) : undefined,
  });
}
