/**
 * The REST paths of the spec, served by trpc-to-openapi from the same router as /trpc.
 * The handler writes onto a captured response object, never onto the socket: its stock
 * error body must never reach a client, and Koa must still add headers (session cookie,
 * rate-limit headers). Errors are recorded in onError and rendered as the envelope.
 * An answer that carries its JSON text in parts (a thread's detail: megabytes of cached bodies,
 * domain/serialised-answer.ts) is sent as those parts: responseMeta, which the handler calls
 * with the answer just before it serialises it, takes them, and the handler then serialises
 * only `null` in its place; the parts are sent as they are (parts-body.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Koa from 'koa';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import { AppError, invalidInput } from '../domain/errors.ts';
import { takeAnswerParts } from '../domain/serialised-answer.ts';
import { toAppError } from '../errors/classify.ts';
import { procedureMeta, type AppRouter } from '../trpc/routers/index.ts';
import { BODY_LIMIT_BYTES, readJsonObject, UNREADABLE_BODY } from './json-body.ts';
import { PartsBody } from './parts-body.ts';
import { requestContext, type RequestContextDeps } from './request-context.ts';

/** What the handler writes: status, headers and body, kept for Koa to send. */
class CapturedResponse {
  statusCode = 200;
  headers: Record<string, string> = {};
  body: string | undefined;
  private readonly real: ServerResponse;
  constructor(real: ServerResponse) {
    this.real = real;
  }
  setHeader(name: string, value: string | number | readonly string[]) {
    this.headers[name.toLowerCase()] = String(value);
  }
  end(chunk?: string) {
    this.body = chunk;
  }
  // Abort-signal wiring of the handler listens for the real socket closing.
  on(event: string, fn: (...a: unknown[]) => void) {
    this.real.on(event, fn);
    return this;
  }
  once(event: string, fn: (...a: unknown[]) => void) {
    this.real.once(event, fn);
    return this;
  }
  off(event: string, fn: (...a: unknown[]) => void) {
    this.real.off(event, fn);
    return this;
  }
  get writableEnded() {
    return this.body !== undefined;
  }
}

/** The handler only parses bodies labelled exactly `application/json`: normalise the label. */
function normaliseContentType(req: IncomingMessage) {
  const type = req.headers['content-type'];
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody) {
    req.headers['content-type'] = 'application/json';
    (req as IncomingMessage & { body?: unknown }).body = undefined;
    return;
  }
  const media = type?.split(';')[0]?.trim().toLowerCase();
  if (media === 'application/json') req.headers['content-type'] = 'application/json';
}

/**
 * Method + path patterns of the REST operations, to know when a request targets one (and
 * which), matched the way trpc-to-openapi matches them (see `targetPath`).
 */
function restOperations(router: AppRouter): { method: string; pattern: RegExp; procedure: string }[] {
  const procedures = router._def.procedures as unknown as Record<
    string,
    { _def: { meta?: { openapi?: { method: string; path: string } } } }
  >;
  return Object.entries(procedures).flatMap(([procedure, p]) => {
    const op = p._def.meta?.openapi;
    if (!op) return [];
    const escaped = op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    const pattern = new RegExp(`^${escaped.replace(/\{[^}]+\}/g, '[^/]+')}$`, 'i');
    return [{ method: op.method, pattern, procedure }];
  });
}

/**
 * The path trpc-to-openapi looks an operation up by: dot segments resolved, one leading and
 * one trailing slash dropped, and (in the pattern) any letter case. Matching `ctx.path`
 * instead missed `/API/MAIL/THREADS/…` and `/api/mail/threads/x/../sync-state`, which the
 * library still served.
 */
function targetPath(url: URL): string {
  return `/${url.pathname.replace(/^\/|\/$/g, '')}`;
}

/** The request's URL, parsed the way trpc-to-openapi parses it. */
function requestUrl(req: IncomingMessage): URL {
  const url = req.url ?? '/';
  return new URL(url.startsWith('/') ? `http://127.0.0.1${url}` : url);
}

/**
 * The query as trpc-to-openapi expects it (`req.query`, key -> values), built on a null
 * prototype: the library's own parsing indexes a plain object by the caller's keys, so
 * `?constructor=1` or `?__proto__=1` crashed it (500). `__proto__` cannot survive as a key
 * of the input object the library builds, so it is refused here as the unknown key it is.
 */
function readQuery(req: IncomingMessage & { query?: unknown }, url: URL): void {
  const query: Record<string, string[]> = Object.create(null);
  for (const [key, value] of url.searchParams) (query[key] ??= []).push(value);
  if (Object.hasOwn(query, '__proto__'))
    throw new AppError('VALIDATION_FAILED', { issues: [{ path: '__proto__', code: 'unrecognized_keys' }] });
  req.query = query;
}

/** The methods whose body trpc-to-openapi reads as input. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export function restMiddleware(router: AppRouter, deps: RequestContextDeps): Koa.Middleware {
  const operations = restOperations(router);
  const failures = new WeakMap<IncomingMessage, unknown>();
  const bodyErrors = new WeakMap<IncomingMessage, AppError>();
  const requests = new WeakMap<object, IncomingMessage>();
  const answerParts = new WeakMap<IncomingMessage, Buffer[]>();
  const handler = createOpenApiNodeHttpHandler({
    router,
    maxBodySize: BODY_LIMIT_BYTES,
    createContext: ({ req }) => {
      const context = requestContext((req as IncomingMessage & { koa: Koa.Context }).koa, deps);
      requests.set(context, req as IncomingMessage);
      return context;
    },
    onError: ({ error, req, path }) => {
      failures.set(req as IncomingMessage, error);
      if (path) (req as IncomingMessage & { koa?: Koa.Context }).koa!.state.procedurePath = path;
    },
    // The success status the procedure declares in its meta (201, 204), else 200.
    responseMeta: ({ paths, errors, ctx, data }) => {
      const req = ctx ? requests.get(ctx) : undefined;
      const parts = errors.length === 0 && req ? takeAnswerParts(data[0]) : undefined;
      if (parts) answerParts.set(req!, parts);
      const status = errors.length === 0 && paths?.length === 1 ? procedureMeta(paths[0]!)?.successStatus : undefined;
      return status ? { status } : {};
    },
  });

  return async (ctx, next) => {
    const req = ctx.req as IncomingMessage & { koa?: Koa.Context };
    req.koa = ctx;
    normaliseContentType(req);
    const hasBody = 'body' in req;
    const url = requestUrl(req);
    const path = targetPath(url);
    const target = operations.find((o) => o.method === ctx.method && o.pattern.test(path));
    if (target) {
      // A request refused here (query, body) never reaches the procedure's rate limit: name the
      // procedure so that it is counted against the route's own bucket, not the global one.
      ctx.state.procedurePath = target.procedure;
      readQuery(req, url);
      const withBody = req as IncomingMessage & { body?: unknown };
      if (!hasBody && !BODY_METHODS.has(ctx.method)) {
        // A body where the operation takes none: still well-formed JSON or refused, as before.
        if (req.headers['content-type'] === 'application/json') withBody.body = await readJsonObject(req);
      } else if (!hasBody) {
        try {
          if (req.headers['content-type'] !== 'application/json') throw invalidInput('unsupported_media_type');
          withBody.body = await readJsonObject(req);
        } catch (err) {
          bodyErrors.set(req, err as AppError);
          req.headers['content-type'] = 'application/json';
          withBody.body = UNREADABLE_BODY;
        }
      }
    }
    const captured = new CapturedResponse(ctx.res);
    let noProcedure = false;
    await handler(req, captured as unknown as ServerResponse, async () => {
      noProcedure = true;
    });
    if (noProcedure) return next();
    if (failures.has(req)) {
      const failure = failures.get(req);
      const bodyError = bodyErrors.get(req);
      throw bodyError && toAppError(failure).code === 'VALIDATION_FAILED' ? bodyError : failure;
    }
    ctx.status = captured.statusCode;
    if (captured.statusCode === 204) {
      ctx.body = null;
      return;
    }
    const parts = answerParts.get(req);
    if (parts && captured.body === 'null') {
      const body = new PartsBody(parts);
      ctx.body = body;
      ctx.length = body.byteLength;
    } else {
      ctx.body = captured.body ?? 'null';
    }
    ctx.type = 'application/json';
  };
}
