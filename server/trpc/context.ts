/**
 * The per-request context every procedure sees, for REST and /trpc alike: an EntityManager
 * (forked when first used), the services, the request id, the client address, the session
 * access.
 */
import type Koa from 'koa';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Container } from '../container.ts';
import type { Logger } from '../logger.ts';

export interface SessionUser {
  accountId: string;
  email: string;
}

export interface RequestContext {
  requestId: string;
  clientIp: string;
  transport: 'rest' | 'trpc';
  koa: Koa.Context;
  em: EntityManager;
  container: Container;
  log: Logger;
}

export function createRequestContext(koa: Koa.Context, container: Container, transport: 'rest' | 'trpc'): RequestContext {
  let em: EntityManager | undefined;
  return {
    requestId: koa.state.requestId,
    clientIp: koa.state.clientIp,
    transport,
    koa,
    // Forked on first use: a procedure that only runs plain SQL (the thread list) needs none.
    get em() {
      return (em ??= container.orm.em.fork());
    },
    container,
    log: koa.state.log ?? container.log,
  };
}
