/**
 * DELETE /auth/account carries a JSON body, which trpc-to-openapi does not read for
 * DELETE. This plain route parses the body and calls the same tRPC procedure through a
 * server-side caller, so rate limit, session, CSRF and input validation stay identical.
 */
import parse from 'co-body';
import type Koa from 'koa';
import type { Container } from '../container.ts';
import { AppError } from '../domain/errors.ts';
import { createRequestContext } from '../trpc/context.ts';
import { toAppError } from './envelope.ts';
import { appRouter } from '../trpc/routers/index.ts';
import { BODY_LIMIT_BYTES } from './rest.ts';

/** Stands in for a body that could not be read: never valid input, so the procedure's own checks run first. */
const UNREADABLE_BODY = Symbol('unreadable body');

export function deleteAccountRoute(container: Container): Koa.Middleware {
  return async (ctx) => {
    let body: unknown;
    // A body problem is reported only where input validation would be: after the rate limit
    // (every request counts), the session (AUTH_REQUIRED) and CSRF, as on every other route.
    let bodyError: AppError | undefined;
    const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (hasBody) {
      if (!ctx.is('application/json')) bodyError = new AppError('VALIDATION_FAILED', { issues: [{ path: '', code: 'unsupported_media_type' }] });
      else {
        try {
          body = await parse.json(ctx.req, { limit: BODY_LIMIT_BYTES, strict: true });
        } catch (err) {
          const tooBig = (err as { type?: string }).type === 'entity.too.large';
          bodyError = new AppError('VALIDATION_FAILED', { issues: [{ path: '', code: tooBig ? 'too_big' : 'invalid_json' }] });
        }
      }
      if (bodyError) body = UNREADABLE_BODY;
    }
    const caller = appRouter.createCaller(createRequestContext(ctx, container, 'rest'));
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
