/**
 * The native tRPC endpoint at /trpc for the typed client, through the fetch adapter (the
 * node adapter with ctx.respond=false answered 404 and lost the session cookie in Koa).
 */
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type Koa from 'koa';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { incomingMessageToRequest } from '@trpc/server/adapters/node-http';
import { AppError } from '../domain/errors.ts';
import { errorHead, toAppError } from '../errors/classify.ts';
import type { AppRouter } from '../trpc/routers/index.ts';
import { BODY_LIMIT_BYTES } from './json-body.ts';
import { requestContext, type RequestContextDeps } from './request-context.ts';

/** Calls one /trpc batch may carry (the typed client sends none larger: it does not batch). */
export const MAX_BATCH_SIZE = 10;

export function trpcMiddleware(router: AppRouter, deps: RequestContextDeps): Koa.Middleware {
  return async (ctx) => {
    // tRPC refuses some requests before the procedure (content type, malformed body) and so
    // before its rate limit: name a single call's procedure for the refused-request count.
    const name = ctx.path.slice('/trpc/'.length);
    if (!name.includes(',')) ctx.state.procedurePath = name;
    const req = incomingMessageToRequest(ctx.req, ctx.res, { maxBodySize: BODY_LIMIT_BYTES });
    const res = await fetchRequestHandler({
      endpoint: '/trpc',
      req,
      router,
      // A batch is one request to the rate limiter: bound how much work it can carry.
      maxBatchSize: MAX_BATCH_SIZE,
      createContext: () => requestContext(ctx, deps),
      responseMeta: ({ errors }) => {
        const app = errors.map((e) => e.cause).find((c): c is AppError => c instanceof AppError);
        return app ? { headers: errorHead(app).headers } : {};
      },
      onError: ({ error }) => {
        // Only what the service answers with a 5xx is an error of the service: a caller's bad
        // input (a ZodError, malformed JSON, an unknown procedure) is not logged as one.
        if (toAppError(error).status >= 500) {
          ctx.state.log.error({ trpcCode: error.code, cause: error.cause?.name }, 'trpc procedure failed');
        }
      },
    });
    ctx.status = res.status;
    res.headers.forEach((value, key) => {
      // tRPC's `Vary: trpc-accept` is added to CORS's `Vary: Origin`, not put in its place.
      if (key === 'vary') ctx.vary(value);
      else if (key !== 'content-length') ctx.set(key, value);
    });
    // A subscription (mail.events) answers with a stream that never ends by itself: pass it on.
    if (res.body && res.headers.get('content-type')?.startsWith('text/event-stream')) {
      ctx.body = Readable.fromWeb(res.body as WebReadableStream);
      return;
    }
    ctx.body = Buffer.from(await res.arrayBuffer());
    // tRPC's early refusals (unsupported content type, malformed batch) are JSON built as a
    // plain Response, labelled text/plain by default: label them as what they are.
    const type = res.headers.get('content-type');
    if (!type || type.startsWith('text/plain')) ctx.type = 'application/json';
  };
}
