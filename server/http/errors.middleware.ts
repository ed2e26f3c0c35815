/**
 * Catches everything below it and answers in the transport's own error format: the spec's
 * envelope on REST and plain routes, tRPC's error shape on /trpc (for a request refused
 * before tRPC ran, e.g. over its rate limit). Unknown routes are NOT_FOUND.
 */
import type Koa from 'koa';
import { AppError } from '../domain/errors.ts';
import { errorSummary } from '../infra/logger.ts';
import { trpcErrorShape } from '../trpc/error-shape.ts';
import { errorHead, toAppError } from '../errors/classify.ts';
import { renderEnvelope } from './envelope.ts';

export function errorEnvelope(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null) throw new AppError('NOT_FOUND');
    } catch (err) {
      const app = toAppError(err);
      if (app.status >= 500)
        ctx.state.log?.error({ code: app.code, ...errorSummary(app.cause ?? err) }, 'request failed');
      const requestId = ctx.state.requestId ?? '';
      const rendered = ctx.path.startsWith('/trpc/')
        ? { ...errorHead(app), body: { error: trpcErrorShape(app, requestId) } }
        : renderEnvelope(app, requestId);
      ctx.state.errorCode = app.code;
      ctx.status = rendered.status;
      ctx.set(rendered.headers);
      ctx.type = 'application/json';
      ctx.body = rendered.body;
    }
  };
}
