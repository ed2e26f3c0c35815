/**
 * The whole API as one router; `AppRouter` is the type the client package imports. Its
 * procedure names are registered for the error formatter, which names a procedure only when it
 * is one (an unknown path is the caller's input, not echoed).
 */
import { registerProcedurePaths, router, type Meta } from '../init.ts';
import { aiProcedures } from './ai.router.ts';
import { analyticsRouter } from './analytics.router.ts';
import { authRouter } from './auth.router.ts';
import { eventProcedures } from './events.router.ts';
import { mailProcedures } from './mail.router.ts';
import { settingsRouter } from './settings.router.ts';
import { statusRouter } from './status.router.ts';
import { systemRouter } from './system.router.ts';

/** The procedures as declared: every output schema still checked on every answer. */
export const appRouter = router({
  system: systemRouter,
  auth: authRouter,
  status: statusRouter,
  analytics: analyticsRouter,
  mail: router({ ...mailProcedures, ...aiProcedures, ...eventProcedures }),
  settings: settingsRouter,
});

export type AppRouter = typeof appRouter;

registerProcedurePaths(Object.keys(appRouter._def.procedures));

const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>;

/** A procedure's route facts by its dotted name (the REST layer, the rate limiter and the OpenAPI document read them here). */
export function procedureMeta(path: string): Meta | undefined {
  return Object.hasOwn(procedures, path) ? procedures[path]!._def.meta : undefined;
}
