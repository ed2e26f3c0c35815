/**
 * DELETE /auth/account carries a JSON body, which trpc-to-openapi does not read for
 * DELETE. This plain route reads the body and calls the same tRPC procedure through a
 * server-side caller, so rate limit, session, CSRF and input validation stay identical.
 */
import type Koa from 'koa';
import { invalidInput, type AppError } from '../domain/errors.ts';
import type { AppRouter } from '../trpc/routers/index.ts';
import { toAppError } from '../errors/classify.ts';
import { readJsonObject, UNREADABLE_BODY } from './json-body.ts';
import { requestContext, type RequestContextDeps } from './request-context.ts';

export function deleteAccountRoute(appRouter: AppRouter, deps: RequestContextDeps): Koa.Middleware {
  return async (ctx) => {
    let body: unknown;
    // A body problem is reported only where input validation would be: after the rate limit
    // (every request counts), the session (AUTH_REQUIRED) and CSRF, as on every other route.
    let bodyError: AppError | undefined;
    const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (hasBody) {
      if (!ctx.is('application/json')) bodyError = invalidInput('unsupported_media_type');
      else body = await readJsonObject(ctx.req).catch((err: AppError) => void (bodyError = err));
      if (bodyError) body = UNREADABLE_BODY;
    }
    const caller = appRouter.createCaller(requestContext(ctx, deps));
    try {
      await caller.auth.deleteAccount(body as { confirm: true });
    } catch (err) {
      // The sentinel failed input validation: report what was really wrong with the body.
      if (bodyError && toAppError(err).code === 'VALIDATION_FAILED') throw bodyError;
      throw err;
    }
    ctx.status = 204;
    ctx.body = null;
  };
}
