/**
 * initTRPC with the one error formatter, and the procedure builders: public (rate limit),
 * authed (+ session) and csrf (+ CSRF token and Origin). The order is the spec's: the rate
 * limit counts every request, refused ones included.
 */
import { initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { ERROR_TABLE } from '../../shared/errors.ts';
import { AppError } from '../domain/errors.ts';
import { toAppError } from '../http/envelope.ts';
import { consumeFor, type BucketName } from '../http/rate-limit.ts';
import { currentRequestId } from '../http/request-id.ts';
import type { RequestContext, SessionUser } from './context.ts';

export interface Meta extends OpenApiMeta {
  /** The rate-limit bucket of the procedure; 'global' when unset. */
  rateLimit?: BucketName;
}

/** The app's procedure names, registered by the app router (routers/index.ts). */
const procedurePaths = new Set<string>();
export function registerProcedurePaths(paths: Iterable<string>): void {
  for (const p of paths) procedurePaths.add(p);
}

const t = initTRPC
  .context<RequestContext>()
  .meta<Meta>()
  .create({
    // Never put a stack into an error shape, whatever NODE_ENV (runtime contract 4d). The
    // formatter drops it anyway; without this tRPC still renders one for every error.
    isDev: false,
    errorFormatter({ shape, error, ctx }) {
      const app = toAppError(error);
      return {
        code: shape.code,
        message: ERROR_TABLE[app.code].message,
        data: {
          appCode: app.code,
          // Errors raised before the context exists (bad content type, unknown procedure) still carry the id.
          requestId: ctx?.requestId ?? currentRequestId() ?? '',
          httpStatus: app.status,
          issues: app.code === 'VALIDATION_FAILED' ? (app.issues ?? []) : undefined,
          // The procedure's name, only when it is one: an unknown path is the caller's input, not echoed.
          path: shape.data.path !== undefined && procedurePaths.has(shape.data.path) ? shape.data.path : undefined,
        },
      };
    },
  });

export const router = t.router;
export const middleware = t.middleware;
export const createCallerFactory = t.createCallerFactory;

/** Carries an AppError through tRPC with the matching tRPC code (and so HTTP status). */
export function wrap(err: unknown): TRPCError {
  if (err instanceof TRPCError) return err;
  const app = toAppError(err);
  const code = ({ 400: 'BAD_REQUEST', 401: 'UNAUTHORIZED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 429: 'TOO_MANY_REQUESTS', 502: 'BAD_GATEWAY', 503: 'SERVICE_UNAVAILABLE' } as const)[app.status as 400] ?? 'INTERNAL_SERVER_ERROR';
  return new TRPCError({ code, message: ERROR_TABLE[app.code].message, cause: app });
}

/** Errors thrown by procedures leave as TRPCErrors whose cause is the AppError. */
function asAppErrors<R extends { ok: boolean; error?: TRPCError }>(result: R): R {
  if (!result.ok && !(result.error!.cause instanceof AppError)) {
    const app = toAppError(result.error);
    // Keep tRPC's own input errors (their cause is the ZodError the envelope needs).
    if (!(app.code === 'VALIDATION_FAILED' && result.error!.code === 'BAD_REQUEST')) throw wrap(app);
  }
  return result;
}

/** The rate limit of the procedure's bucket: every request counts, refused ones included. */
async function rateLimit(ctx: RequestContext, meta: Meta | undefined): Promise<void> {
  await consumeFor(ctx.koa, ctx.container.rateLimits, meta?.rateLimit ?? 'global').catch((err: unknown) => {
    throw wrap(err);
  });
}

async function signedInUser(ctx: RequestContext) {
  const user = await ctx.container.sessions.currentUser(ctx.koa).catch((e: unknown) => {
    throw wrap(e);
  });
  if (!user) throw wrap(new AppError('AUTH_REQUIRED'));
  return user;
}

// Each procedure kind is one middleware (rate limit, then session, then CSRF token, in the
// spec's order) rather than a chain of them: every level of a tRPC middleware chain copies
// the context and adds promises, on every request.
export const publicProcedure = t.procedure.use(async ({ ctx, meta, next }) => {
  await rateLimit(ctx, meta);
  return asAppErrors(await next());
});

/**
 * The signed-in user goes onto the request's own context object. tRPC copies the whole
 * context for `next({ ctx: { user } })` (and so would fork the lazily forked EntityManager);
 * `ctx: undefined` typed as the override keeps the procedure's `ctx.user` typed without it.
 */
function withUser(ctx: RequestContext, user: SessionUser) {
  (ctx as RequestContext & { user: SessionUser }).user = user;
  return { ctx: undefined as unknown as { user: SessionUser } };
}

export const authedProcedure = t.procedure.use(async ({ ctx, meta, next }) => {
  await rateLimit(ctx, meta);
  const user = await signedInUser(ctx);
  return asAppErrors(await next(withUser(ctx, user)));
});

export const csrfProcedure = t.procedure.use(async ({ ctx, meta, next }) => {
  await rateLimit(ctx, meta);
  const user = await signedInUser(ctx);
  if (!ctx.container.sessions.csrfValid(ctx.koa)) throw wrap(new AppError('CSRF_FAILED'));
  return asAppErrors(await next(withUser(ctx, user)));
});
