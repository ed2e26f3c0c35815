/** Catches everything below it and answers with the spec's envelope; unknown routes are NOT_FOUND. */
import type Koa from 'koa';
import { AppError } from '../domain/errors.ts';
import { errorSummary } from '../logger.ts';
import { renderError, toAppError } from './envelope.ts';

export function errorEnvelope(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null) throw new AppError('NOT_FOUND');
    } catch (err) {
      const app = toAppError(err);
      if (app.status >= 500) ctx.state.log?.error({ code: app.code, ...errorSummary(app.cause ?? err) }, 'request failed');
      const rendered = renderError(app, ctx.state.requestId ?? '');
      ctx.state.errorCode = app.code;
      ctx.status = rendered.status;
      ctx.set(rendered.headers);
      ctx.type = 'application/json';
      ctx.body = rendered.body;
    }
  };
}
