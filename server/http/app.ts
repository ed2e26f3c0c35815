/**
 * The Koa application, middleware order in one screen:
 * (answer observer, when given) -> request id -> error envelope -> security headers -> CORS ->
 * session -> plain routes (/, /health, /metrics, /openapi.json, /trpc, OAuth redirects) ->
 * REST (trpc-to-openapi) -> NOT_FOUND.
 */
import Koa from 'koa';
import Router from '@koa/router';
import cors from '@koa/cors';
import helmet, { type HelmetOptions } from 'helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Container } from '../container.ts';
import { AppError } from '../domain/errors.ts';
import { appRouter, procedureMeta } from '../trpc/routers/index.ts';
import { deleteAccountRoute } from './delete-account.route.ts';
import { errorEnvelope } from './errors.middleware.ts';
import { eventsRoute } from './events.route.ts';
import { oauthRoutes } from './oauth.routes.ts';
import { routeLabeler } from '../infra/metrics.ts';
import { metricsRoute, requestMetrics } from './metrics.route.ts';
import { observeAnswers, type AnswerObserver } from './observe.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { healthRoute, homeRoute } from './pages.ts';
import { consumeFor, countRefused, type BucketName } from './rate-limit.ts';
import { requestId } from './request-id.ts';
import { restMiddleware } from './rest.ts';
import type { RouteInstaller } from './route-installer.ts';
import { staticRoutes } from './static.routes.ts';
import { trpcMiddleware } from './trpc.ts';

/** Readable from any origin, without credentials. */
const PUBLIC_CORS_PATHS = new Set(['/health', '/api/status/incidents']);
/** Routes that never touch the session (and so still answer while the database is down). */
const SESSIONLESS_PATHS = new Set([
  '/',
  '/health',
  '/metrics',
  '/openapi.json',
  '/status',
  '/status.js',
  '/status.css',
  '/docs',
  '/docs/init.js',
]);

/**
 * Helmet's security headers. They depend on the configuration only, so helmet computes them
 * once, here, and every response gets the same set (helmet's own middleware would run its
 * twelve header middlewares on every request).
 */
export function securityHeaders(options: Readonly<HelmetOptions>): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const capture = {
    setHeader: (name: string, value: string | number) => void (headers[name] = String(value)),
    removeHeader: (name: string) => void delete headers[name],
  };
  let done = false;
  helmet(options)({} as IncomingMessage, capture as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err;
    done = true;
  });
  if (!done) throw new Error('helmet did not finish synchronously');
  return headers;
}

/**
 * `routes`: more plain routes (a test adds one to prove the /api/ guard); `observe`: called
 * with every answer as sent (tests check them against /openapi.json).
 */
export function buildApp(
  container: Container,
  opts: { routes?: RouteInstaller[]; observe?: AnswerObserver } = {},
): Koa {
  const { config, services } = container;
  const contextDeps = {
    services,
    sessions: container.sessions,
    rateLimits: container.rateLimits,
    orm: container.orm,
    log: container.log,
  };
  // Behind proxies, the client is the X-Forwarded-For entry TRUST_PROXY_HOPS from the right.
  const app = new Koa({ proxy: config.trustProxy, maxIpsCount: config.trustProxyHops });
  app.silent = true;

  const limit =
    (bucket: BucketName): Koa.Middleware =>
    async (ctx, next) => {
      await consumeFor(ctx, container.rateLimits, bucket);
      return next();
    };

  const routes = new Router();
  const health = () => services.health.check();
  routes.get('/', limit('global'), homeRoute(health, config.statusPageUrl));
  routes.get('/health', limit('global'), healthRoute(health));
  let openapi: ReturnType<typeof buildOpenApiDocument> | undefined;
  const openapiDocument = () => (openapi ??= buildOpenApiDocument(appRouter, { baseUrl: config.publicBaseUrl }));
  routes.get('/openapi.json', limit('global'), (ctx) => {
    ctx.body = openapiDocument();
  });
  routes.get('/metrics', limit('global'), metricsRoute(container.metrics, config.metricsToken));
  routes.all('/trpc/{*path}', trpcMiddleware(appRouter, contextDeps));
  routes.delete('/auth/account', deleteAccountRoute(appRouter, contextDeps));
  staticRoutes(routes, { limit });
  oauthRoutes({ config, auth: services.auth, sessions: container.sessions, orm: container.orm })(routes, { limit });
  for (const extra of opts.routes ?? []) extra(routes, { limit });

  const sessionMw = container.sessions.install(app);
  if (opts.observe) app.use(observeAnswers(opts.observe, container.log));
  // A body refused part-way (over the size limit, undecodable) is left paused by the body
  // parser, which keeps Node from discarding the rest of it: the keep-alive connection then
  // stalled until reset, failing the client's next request. Let Node drain it, as it does
  // for a body nobody read (outermost, with the cache policy that applies to every answer).
  app.use(async (ctx, next) => {
    try {
      await next();
    } finally {
      if (!ctx.req.complete) ctx.req.resume();
      // Answers carry mail, settings and CSRF tokens: no cache (browser or shared) may keep
      // one unless its route says otherwise (the static pages and assets do). Errors included.
      if (!ctx.response.get('Cache-Control')) ctx.set('Cache-Control', 'no-store');
    }
    // An answer its route writes itself (GET /api/mail/events) starts once every middleware has
    // run: the session's cookie is set by then, or an error envelope has replaced it.
    (ctx.state.startStream as (() => void) | undefined)?.();
  });
  app.use(requestId(container.log));
  let label: ((path: string) => string) | undefined;
  app.use(
    requestMetrics(
      container.metrics,
      () =>
        (label ??= routeLabeler([
          ...routes.stack.map((l) => String(l.path)),
          ...Object.keys(openapiDocument().paths ?? {}),
        ])),
    ),
  );
  app.use(errorEnvelope());
  const security = securityHeaders({
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        frameAncestors: ["'none'"],
        upgradeInsecureRequests: config.secureCookies ? [] : null,
      },
    },
    strictTransportSecurity: config.secureCookies ? { maxAge: 31_536_000, includeSubDomains: true } : false,
    crossOriginResourcePolicy: { policy: 'same-site' },
  });
  app.use((ctx, next) => {
    ctx.set(security);
    if (PUBLIC_CORS_PATHS.has(ctx.path)) ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
    return next();
  });
  app.use(
    cors({
      origin: (ctx) =>
        PUBLIC_CORS_PATHS.has(ctx.path) ? '*' : ctx.get('Origin') === config.webOrigin ? config.webOrigin : '',
      credentials: (ctx) => !PUBLIC_CORS_PATHS.has(ctx.path),
      allowMethods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
      allowHeaders: ['Content-Type', 'X-CSRF-Token', 'X-Request-Id', 'Authorization', 'trpc-accept'],
      exposeHeaders: ['X-Request-Id', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
      maxAge: 600,
    }),
  );
  app.use(countRefused(container.rateLimits, (path) => procedureMeta(path)?.rateLimit));
  app.use((ctx, next) =>
    SESSIONLESS_PATHS.has(ctx.path) || ctx.path.startsWith('/docs/') ? next() : sessionMw(ctx, next),
  );
  // The REST paths (/api/…) are trpc-to-openapi's, never the router's: they skip its matching.
  const routerPaths = routes.stack.map((layer) => String(layer.path).toLowerCase());
  if (routerPaths.some((p) => p.startsWith('/api/')))
    throw new Error('a plain route under /api/ would be shadowed by the REST paths');
  const routed = routes.routes() as Koa.Middleware;
  app.use((ctx, next) => (ctx.path.startsWith('/api/') ? next() : routed(ctx, next)));
  app.use(eventsRoute(appRouter, contextDeps));
  app.use(restMiddleware(appRouter, contextDeps));
  app.use(() => {
    throw new AppError('NOT_FOUND');
  });
  return app;
}
