/**
 * Request id on every request: a caller's well-formed X-Request-Id is kept, else a new UUID.
 * When tracing runs, the request (its access log line included) runs in its server span.
 */
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { accessLogger, type Logger } from '../infra/logger.ts';
import { runWithRequestId } from '../infra/request-scope.ts';
import { traceRequest, tracing } from '../infra/trace-hooks.ts';
import { clientKey } from './client-address.ts';

const SAFE_ID = /^[A-Za-z0-9._-]{8,64}$/;

export function requestId(log: Logger): Koa.Middleware {
  const access = accessLogger(log);
  const handle: Koa.Middleware = async (ctx, next) => {
    const given = ctx.get('X-Request-Id');
    const id = SAFE_ID.test(given) ? given : randomUUID();
    ctx.state.requestId = id;
    ctx.state.clientIp = clientKey(ctx.ip || ctx.socket.remoteAddress);
    // Lines logged while the request runs get its id from the logger's mixin: no child per request.
    ctx.state.log = log;
    ctx.set('X-Request-Id', id);
    const started = performance.now();
    try {
      await runWithRequestId(id, next);
    } finally {
      // Path only: query strings can carry OAuth codes and state.
      access.info(
        {
          requestId: id,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Math.round(performance.now() - started),
          code: ctx.state.errorCode,
        },
        'request',
      );
    }
  };
  return (ctx, next) => (tracing() ? traceRequest(ctx, () => handle(ctx, next)) : handle(ctx, next));
}
