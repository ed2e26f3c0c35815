/**
 * The native tRPC endpoint at /trpc for the typed client, through the fetch adapter (the
 * node adapter with ctx.respond=false answered 404 and lost the session cookie in Koa).
 */
import type Koa from 'koa';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { incomingMessageToRequest } from '@trpc/server/adapters/node-http';
import { AppError, retryAfterFor } from '../domain/errors.ts';
import type { Container } from '../container.ts';
import { createRequestContext } from '../trpc/context.ts';
import type { AppRouter } from '../trpc/routers/index.ts';
import { BODY_LIMIT_BYTES } from './rest.ts';

export function trpcMiddleware(router: AppRouter, container: Container): Koa.Middleware {
  return async (ctx) => {
    const req = incomingMessageToRequest(ctx.req, ctx.res, { maxBodySize: BODY_LIMIT_BYTES });
    const res = await fetchRequestHandler({
      endpoint: '/trpc',
      req,
      router,
      createContext: () => createRequestContext(ctx, container, 'trpc'),
      responseMeta: ({ errors }) => {
        const app = errors.map((e) => e.cause).find((c): c is AppError => c instanceof AppError);
        const retryAfter = app && retryAfterFor(app);
        return retryAfter ? { headers: { 'Retry-After': String(retryAfter) } } : {};
      },
      onError: ({ error }) => {
        if (!(error.cause instanceof AppError) || error.cause.status >= 500) {
          ctx.state.log.error({ trpcCode: error.code, cause: error.cause?.name }, 'trpc procedure failed');
        }
      },
    });
    ctx.status = res.status;
    res.headers.forEach((value, key) => {
      if (key !== 'content-length') ctx.set(key, value);
    });
    ctx.body = Buffer.from(await res.arrayBuffer());
  };
}
