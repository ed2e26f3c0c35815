/**
 * GET /metrics (Prometheus text format) for operators, with the status-admin credential
 * (`Authorization: Bearer <STATUS_ADMIN_TOKEN>`; otherwise FORBIDDEN, as the incident
 * writes), and the middleware that times every request into it and, when tracing runs, names
 * the request's span after the same route template (and its tRPC procedure).
 */
import type Koa from 'koa';
import { AppError } from '../domain/errors.ts';
import type { StatusAdmin } from '../domain/status/status-admin.ts';
import type { Metrics } from '../infra/metrics.ts';
import { nameRequestSpan, tracing } from '../infra/trace-hooks.ts';
import { procedureMeta } from '../trpc/routers/index.ts';

export function metricsRoute(metrics: Metrics, admin: StatusAdmin): Koa.Middleware {
  return async (ctx) => {
    const authorization = ctx.get('Authorization');
    if (!admin.allows(authorization.startsWith('Bearer ') ? authorization.slice(7) : undefined)) throw new AppError('FORBIDDEN');
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  };
}

/** Times each request into the metrics, labelled by `label` (the route template, or `unmatched`). */
export function requestMetrics(metrics: Metrics, label: () => (path: string) => string): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const route = label()(ctx.path);
      metrics.observeRequest({ route, method: ctx.method, status: ctx.status, seconds: (performance.now() - started) / 1000, code: ctx.state.errorCode });
      if (tracing()) {
        // The /trpc path names the procedure as the caller wrote it: only a real one is recorded.
        const procedure: string | undefined = ctx.state.procedurePath;
        nameRequestSpan(ctx.method, route === 'unmatched' ? undefined : route, procedure && procedureMeta(procedure) ? procedure : undefined);
      }
    }
  };
}
