/**
 * The whole API as one router; `AppRouter` is the type the client package imports.
 * Importing this module only builds the router: what the service changes on it is done once,
 * at start-up, by `buildAppRouter()`.
 */
import { registerProcedurePaths, router, skipTrustedOutputValidation, type Meta } from '../init.ts';
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

let prepared = false;

/**
 * The router as the service serves it (buildApp calls this once per app): the procedure names
 * registered for the error formatter, and tRPC's output validator removed from the procedures
 * whose meta says `trustedOutput` (`skipTrustedOutputValidation`, which throws if a tRPC upgrade
 * changed how outputs are validated). The procedures are this module's own objects, shared by
 * every app in the process, so the change is made on the first call only.
 */
export function buildAppRouter(): AppRouter {
  if (!prepared) {
    registerProcedurePaths(Object.keys(appRouter._def.procedures));
    skipTrustedOutputValidation(appRouter._def.procedures);
    prepared = true;
  }
  return appRouter;
}

const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>;

/** A procedure's route facts by its dotted name (the REST layer, the rate limiter and the OpenAPI document read them here). */
export function procedureMeta(path: string): Meta | undefined {
  return Object.hasOwn(procedures, path) ? procedures[path]!._def.meta : undefined;
}
