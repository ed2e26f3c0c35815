/** The whole API as one router; `AppRouter` is the type the client package imports. */
import { registerProcedurePaths, router, skipTrustedOutputValidation, type Meta } from '../init.ts';
import { aiProcedures } from './ai.router.ts';
import { analyticsRouter } from './analytics.router.ts';
import { authRouter } from './auth.router.ts';
import { mailProcedures } from './mail.router.ts';
import { settingsRouter } from './settings.router.ts';
import { statusRouter } from './status.router.ts';
import { systemRouter } from './system.router.ts';

export const appRouter = router({
  system: systemRouter,
  auth: authRouter,
  status: statusRouter,
  analytics: analyticsRouter,
  mail: router({ ...mailProcedures, ...aiProcedures }),
  settings: settingsRouter,
});

registerProcedurePaths(Object.keys(appRouter._def.procedures));
skipTrustedOutputValidation(appRouter._def.procedures);

export type AppRouter = typeof appRouter;

const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>;

/** A procedure's route facts by its dotted name (the REST layer, the rate limiter and the OpenAPI document read them here). */
export function procedureMeta(path: string): Meta | undefined {
  return Object.hasOwn(procedures, path) ? procedures[path]!._def.meta : undefined;
}
