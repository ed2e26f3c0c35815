/**
 * buildContainer: every long-lived dependency, built from the config with explicit
 * factories (no module singletons), and closed in reverse order. Tests pass overrides.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import type { Config } from './config.ts';
import { createAiFeature, type AiFeature } from './domain/ai/index.ts';
import { createAnalyticsService, type AnalyticsService } from './domain/analytics/analytics.service.ts';
import { createAuthService, noMailWatch, type AuthService, type MailWatchControl } from './domain/auth/auth.service.ts';
import { createCredentialsService, type CredentialsService } from './domain/auth/credentials.service.ts';
import { createTokenCrypto, type TokenCrypto } from './domain/auth/token-crypto.ts';
import { preparedRunner, type RunPrepared } from './domain/prepared-sql.ts';
import { createHealthService, type HealthService } from './domain/health/health.service.ts';
import { syncNotInstalled, type SyncService } from './domain/mail/sync.service.ts';
import { createSettingsService, type SettingsService } from './domain/settings/settings.service.ts';
import { createIncidentService, type IncidentService } from './domain/status/incident.service.ts';
import { createRateLimits, type BucketName, type RateLimits } from './http/rate-limit.ts';
import { createSessions, type Sessions } from './http/sessions.ts';
import { createLogger, errorSummary, type Logger } from './logger.ts';
import { createOAuthProvider, type OAuthProvider } from './providers/oauth.ts';
import { cachedProbe, httpProbe, notConfigured, type Probe } from './providers/reachability.ts';

export type RouteInstaller = (routes: Router, helpers: { limit: (bucket: BucketName) => Koa.Middleware }) => void;

export interface Container {
  config: Readonly<Config>;
  log: Logger;
  orm: MikroORM;
  /** Prepared statements of the hot read paths, on the ORM's pool. */
  prepared: RunPrepared;
  /** The rate limiter's own pool. */
  pool: pg.Pool;
  rateLimits: RateLimits;
  sessions: Sessions;
  health: HealthService;
  incidents: IncidentService;
  tokenCrypto: TokenCrypto;
  oauth: OAuthProvider;
  credentials: CredentialsService;
  auth: AuthService;
  analytics: AnalyticsService;
  /** AI triage, drafts and the token budget (replaceable: tests inject a clock). */
  ai: AiFeature;
  settings: SettingsService;
  /** The mail watch; a no-op until the watch feature installs itself. */
  mailWatch: MailWatchControl;
  /** Fetches and stores the bodies of a thread's messages if not yet cached (the mail feature installs it). */
  threadBodies: { ensure(em: EntityManager, accountId: string, threadId: string): Promise<void> };
  /** The mail sync engine (the mail feature installs it; the route and the poller share it). */
  sync: SyncService;
  /** The live-inbox workers, exposed so tests can drive a round directly. */
  liveInbox?: { maintenance?: { runOnce(): Promise<unknown> }; poller?: { runOnce(): Promise<number> } };
  /** Plain Koa routes that features add (OAuth redirects, pages). */
  extraRoutes: RouteInstaller[];
  /** Background workers started with the server and stopped before the database closes. */
  workers: { start(): void; stop(): Promise<void> }[];
  close(): Promise<void>;
}

export interface ContainerOptions {
  config: Readonly<Config>;
  orm: MikroORM;
  databaseUrl: string;
  log?: Logger;
  probes?: { mail?: Probe; ai?: Probe };
  oauth?: OAuthProvider;
}

export function defaultProbes(config: Readonly<Config>): { mail: Probe; ai: Probe } {
  const aiBase = (config.openai.baseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
  return {
    mail: config.oauth.configured ? cachedProbe(httpProbe(`${config.gmailApiUrl}$discovery/rest?version=v1`)) : notConfigured,
    ai: config.openai.configured
      ? cachedProbe(httpProbe(`${aiBase}/models`, { headers: { Authorization: `Bearer ${config.openai.apiKey}` } }))
      : notConfigured,
  };
}

export async function buildContainer(opts: ContainerOptions): Promise<Container> {
  const { config, orm } = opts;
  const log = opts.log ?? createLogger({ level: config.logLevel });
  const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 5, connectionTimeoutMillis: 2_000, idleTimeoutMillis: 30_000 });
  // An idle client dropped by a database restart must not crash the process.
  pool.on('error', (err) => log.warn(errorSummary(err), 'rate-limit pool client error'));
  // The pool listens for errors of idle clients only; a connection the server drops while a
  // client is checked out raises 'error' on that client, and an unheard 'error' kills the
  // process (seen: PostgreSQL restarting under load, 57P01).
  pool.on('connect', (client) => {
    client.on('error', (err) => log.warn(errorSummary(err), 'rate-limit pool client error'));
  });
  const prepared = preparedRunner(orm);
  const probes = { ...defaultProbes(config), ...opts.probes };
  const pingDatabase = async () => {
    await Promise.race([
      orm.em.getConnection().execute('select 1'),
      new Promise((_, reject) => setTimeout(() => reject(new Error('database ping timed out')), 2_000).unref()),
    ]);
  };

  if (!config.tokenKeys?.length) throw new Error('TOKEN_ENCRYPTION_KEY is required');
  const tokenCrypto = createTokenCrypto(config.tokenKeys);
  const oauth = opts.oauth ?? createOAuthProvider(config);
  const credentials = createCredentialsService({ orm, crypto: tokenCrypto, oauth, log });

  const container: Container = {
    config,
    log,
    orm,
    prepared,
    pool,
    rateLimits: createRateLimits({ pool, global: config.rateLimit }),
    sessions: createSessions(orm, prepared, config),
    health: createHealthService({ pingDatabase, mail: probes.mail, ai: probes.ai }),
    incidents: createIncidentService(),
    tokenCrypto,
    oauth,
    credentials,
    auth: createAuthService({ oauth, credentials, log, stateTtlSeconds: config.oauth.stateTtlSeconds, watch: () => container.mailWatch }),
    analytics: createAnalyticsService(),
    ai: createAiFeature({ config, orm, log, ensureBodies: (em, accountId, threadId) => container.threadBodies.ensure(em, accountId, threadId) }),
    settings: createSettingsService(),
    mailWatch: noMailWatch,
    threadBodies: { ensure: async () => {} },
    sync: syncNotInstalled,
    extraRoutes: [],
    workers: [],
    async close() {
      for (const w of [...container.workers].reverse()) await w.stop();
      await pool.end();
      await orm.close(true);
    },
  };
  return container;
}
