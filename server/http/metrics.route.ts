/**
 * GET /metrics (Prometheus text format) for operators' scrapers, with the metrics credential
 * (`Authorization: Bearer <METRICS_TOKEN>`; otherwise FORBIDDEN, and always when none is
 * configured). Its own token, not the status-admin one: a scraper's credential sits in every
 * Prometheus config and must not be able to write the status page. And the middleware that times every request into it and, when tracing runs, names
 * the request's span after the same route template (and its tRPC procedure).
 */
import type Koa from 'koa';
import { AppError } from '../domain/errors.ts';
import { createStatusAdmin } from '../domain/status/status-admin.ts';
import type { Metrics } from '../infra/metrics.ts';
import { nameRequestSpan, tracing } from '../infra/trace-hooks.ts';
import { procedureMeta } from '../trpc/routers/index.ts';

export function metricsRoute(metrics: Metrics, metricsToken: string | undefined): Koa.Middleware {
  const scraper = createStatusAdmin(metricsToken); // the same constant-time bearer check, another token
  return async (ctx) => {
    const authorization = ctx.get('Authorization');
    if (!scraper.allows(authorization.startsWith('Bearer ') ? authorization.slice(7) : undefined))
      throw new AppError('FORBIDDEN');
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
      metrics.observeRequest({
        route,
        method: ctx.method,
        status: ctx.status,
        seconds: (performance.now() - started) / 1000,
        code: ctx.state.errorCode,
      });
      if (tracing()) {
        // The /trpc path names the procedure as the caller wrote it: only a real one is recorded.
        const procedure: string | undefined = ctx.state.procedurePath;
        nameRequestSpan(
          ctx.method,
          route === 'unmatched' ? undefined : route,
          procedure && procedureMeta(procedure) ? procedure : undefined,
        );
      }
    }
  };
}
