/**
 * initTRPC with the one error formatter, the route facts each procedure declares in its
 * meta, and the procedure builders: public (rate limit), authed (+ session) and csrf
 * (+ CSRF token and Origin). The order is the spec's: the rate limit counts every request,
 * refused ones included.
 */
import { initTRPC, TRPCError } from '@trpc/server';
import type { z } from 'zod';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { ERROR_TABLE, type ErrorCode } from '../../shared/errors.ts';
import type { SessionUser } from '../domain/auth/session-user.ts';
import { AppError } from '../domain/errors.ts';
import type { BucketName } from '../domain/rate-limit-buckets.ts';
import { toAppError } from '../errors/classify.ts';
import { currentRequestId } from '../infra/request-scope.ts';
import type { Context } from './context.ts';
import { trpcErrorShape } from './error-shape.ts';

/** What a route declares once, read by the REST layer, the rate limiter and the OpenAPI document. */
export interface Meta extends OpenApiMeta {
  /** The rate-limit bucket of the procedure; 'global' when unset. */
  rateLimit?: BucketName;
  /** The REST success status when it is not 200. */
  successStatus?: 201 | 204;
  /** The spec's error codes this route can answer besides RATE_LIMITED and INTERNAL_ERROR (spec part 4). */
  errors?: readonly ErrorCode[];
}

/** The app's procedure names, registered by buildAppRouter (routers/index.ts) at start-up. */
const procedurePaths = new Set<string>();
export function registerProcedurePaths(paths: Iterable<string>): void {
  for (const p of paths) procedurePaths.add(p);
}

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // Never put a stack into an error shape, whatever NODE_ENV (runtime contract 4d). The
    // formatter drops it anyway; without this tRPC still renders one for every error.
    isDev: false,
    // Live events (mail.events): a comment line every 25 s keeps proxies from closing an idle stream.
    sse: { ping: { enabled: true, intervalMs: 25_000 } },
    errorFormatter({ shape, error, ctx }) {
      // Errors raised before the context exists (bad content type, unknown procedure) still carry the id.
      const requestId = ctx?.requestId ?? currentRequestId() ?? '';
      // The procedure's name, only when it is one: an unknown path is the caller's input, not echoed.
      const path = shape.data.path !== undefined && procedurePaths.has(shape.data.path) ? shape.data.path : undefined;
      return trpcErrorShape(toAppError(error), requestId, { code: shape.code, path });
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** Carries an AppError through tRPC with the table's tRPC code (and so HTTP status). */
export function wrap(err: unknown): TRPCError {
  if (err instanceof TRPCError) return err;
  const app = toAppError(err);
  return new TRPCError({ code: ERROR_TABLE[app.code].trpc, message: ERROR_TABLE[app.code].message, cause: app });
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
async function rateLimit(ctx: Context, meta: Meta | undefined): Promise<void> {
  await ctx.rateLimit?.(meta?.rateLimit ?? 'global').catch((err: unknown) => {
    throw wrap(err);
  });
}

async function signedInUser(ctx: Context): Promise<SessionUser> {
  const user = await ctx.session.currentUser().catch((e: unknown) => {
    throw wrap(e);
  });
  if (!user) throw wrap(new AppError('AUTH_REQUIRED'));
  return user;
}

/**
 * The signed-in user goes onto the request's own context object. tRPC copies the whole
 * context for `next({ ctx: { user } })` (and so would fork the lazily forked EntityManager);
 * `ctx: undefined` typed as the override keeps the procedure's `ctx.user` typed without it.
 */
function withUser(ctx: Context, user: SessionUser) {
  ctx.user = user;
  return { ctx: undefined as unknown as { user: SessionUser } };
}

// Each procedure kind is one middleware (rate limit, then session, then CSRF token, in the
// spec's order) rather than a chain of them: every level of a tRPC middleware chain copies
// the context and adds promises, on every request.
export const publicProcedure = t.procedure.use(async ({ ctx, meta, next }) => {
  await rateLimit(ctx, meta);
  return asAppErrors(await next());
});

export const authedProcedure = t.procedure.use(async ({ ctx, meta, next }) => {
  await rateLimit(ctx, meta);
  const user = await signedInUser(ctx);
  return asAppErrors(await next(withUser(ctx, user)));
});

export const csrfProcedure = t.procedure.use(async ({ ctx, meta, next }) => {
  await rateLimit(ctx, meta);
  const user = await signedInUser(ctx);
  if (!ctx.session.csrfValid()) throw wrap(new AppError('CSRF_FAILED'));
  return asAppErrors(await next(withUser(ctx, user)));
});

/** Status-admin credential: `Authorization: Bearer <STATUS_ADMIN_TOKEN>`. */
export const adminProcedure = t.procedure.use(async ({ ctx, meta, next }) => {
  await rateLimit(ctx, meta);
  if (!ctx.services.statusAdmin.allows(ctx.bearerToken)) throw wrap(new AppError('FORBIDDEN'));
  return asAppErrors(await next());
});

/**
 * An output schema that documents an answer and types its resolver but is not run on it: for
 * hot reads whose answer is built field by field from SQL columns (never an entity, never a
 * spread row). tRPC's output validator calls the schema's `parse`, which on this copy passes
 * the answer through; the rest of the schema (its shape, for /openapi.json, with
 * `additionalProperties: false`) is the original's, and the test suite checks every answer it
 * sees against that document. On the thread list the validator was much of each request's
 * memory and CPU (bench/results/HISTORY.md).
 */
export function trustedOutput<S extends z.ZodType>(schema: S): S {
  const pass = (value: unknown) => value;
  return Object.assign(schema.clone(), { parse: pass, parseAsync: async (value: unknown) => value }) as S;
}
