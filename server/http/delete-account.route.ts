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
import { appRouter } from '../trpc/routers/index.ts';
import { BODY_LIMIT_BYTES } from './rest.ts';

export function deleteAccountRoute(container: Container): Koa.Middleware {
  return async (ctx) => {
    let body: unknown;
    const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (hasBody) {
      if (!ctx.is('application/json')) throw new AppError('VALIDATION_FAILED', { issues: [{ path: '', code: 'unsupported_media_type' }] });
      try {
        body = await parse.json(ctx.req, { limit: BODY_LIMIT_BYTES, strict: true });
      } catch (err) {
        const tooBig = (err as { type?: string }).type === 'entity.too.large';
        throw new AppError('VALIDATION_FAILED', { issues: [{ path: '', code: tooBig ? 'too_big' : 'invalid_json' }] });
      }
    }
    const caller = appRouter.createCaller(createRequestContext(ctx, container, 'rest'));
    await caller.auth.deleteAccount(body as { confirm: true });
    ctx.status = 204;
    ctx.body = null;
  };
}
