/**
 * buildContainer: every long-lived dependency, built from the config in one pass, in
 * dependency order (infrastructure, providers, services, background work), by explicit
 * factories; frozen once built. Tests and the demo change behaviour only through
 * `overrides`, passed in. `close()` stops the workers, then the pools.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import type { Config } from './infra/config.ts';
import { createAiFeature } from './domain/ai/index.ts';
import { createAutoTriage } from './domain/ai/auto-triage.ts';
import { createAutoTriageWorker, type AutoTriageWorker } from './jobs/auto-triage.job.ts';
import { createAnalyticsService } from './domain/analytics/analytics.service.ts';
import { createAuthService, type MailWatchControl } from './domain/auth/auth.service.ts';
import { createCredentialsService, type CredentialsService } from './domain/auth/credentials.service.ts';
import { createTokenCrypto, type TokenCrypto } from './domain/auth/token-crypto.ts';
import { createHealthService } from './domain/health/health.service.ts';
import { createSyncService } from './domain/mail/sync/sync.service.ts';
import {
  createThreadBodies,
  type ThreadBodies,
  type ThreadBodiesOptions,
} from './domain/mail/threads/thread-bodies.service.ts';
import { createThreadReads } from './domain/mail/threads/thread.service.ts';
import type { OpenGateOptions } from './domain/mail/threads/open-gate.ts';
import { preparedRunner, type RunPrepared } from './domain/prepared-sql.ts';
import { createSettingsService } from './domain/settings/settings.service.ts';
import { createIncidentService } from './domain/status/incident.service.ts';
import { createStatusAdmin } from './domain/status/status-admin.ts';
import { createMailEventsService, DEFAULT_STREAM_LIMITS, type StreamLimits } from './domain/events/events.service.ts';
import { createEventHub, type EventHub } from './domain/events/hub.ts';
import { createRateLimits, type RateLimits } from './http/rate-limit.ts';
import { createSessions, SESSION_IDLE_MS, type Sessions } from './http/sessions.ts';
import { createLogger, errorSummary, type Logger } from './infra/logger.ts';
import { createLiveInbox, type LiveInbox, type LiveInboxOptions, type Worker } from './jobs/live-inbox.ts';
import { liveInboxReadings } from './jobs/readings.ts';
import { createMetrics, type Metrics } from './infra/metrics.ts';
import { createGmailFactory } from './providers/gmail.ts';
import { createQuotaPacer, type QuotaOptions } from './providers/gmail-quota.ts';
import { createQuotaLedger, unitsOfDay } from './domain/mail-quota/quota-ledger.ts';
import { createBodyParser, type BodyParserOptions } from './providers/mail/body-parser.ts';
import { createOAuthProvider, type OAuthProvider } from './providers/oauth.ts';
import { createOpenAiProvider, type AiProvider } from './providers/openai.ts';
import { cachedProbe, httpProbe, notConfigured, type Probe } from './providers/reachability.ts';
import type { Services } from './services.ts';

export interface Container {
  readonly config: Readonly<Config>;
  readonly log: Logger;
  readonly orm: MikroORM;
  /** Prepared statements of the hot read paths, on the ORM's pool. */
  readonly prepared: RunPrepared;
  /** The rate limiter's own pool. */
  readonly pool: pg.Pool;
  readonly rateLimits: RateLimits;
  readonly sessions: Sessions;
  readonly tokenCrypto: TokenCrypto;
  readonly oauth: OAuthProvider;
  readonly credentials: CredentialsService;
  /** Fetches and stores a thread's bodies when first opened (the AI reads them too). */
  readonly threadBodies: ThreadBodies;
  /** What procedures call (the tRPC context carries exactly this). */
  readonly services: Readonly<Services>;
  /** The mail watch, the job engine and its workers, the notification intake. */
  readonly liveInbox: LiveInbox;
  /** Background workers started with the server and stopped before the database closes. */
  readonly workers: readonly Worker[];
  /** What GET /metrics serves. */
  readonly metrics: Metrics;
  /** This instance's live event streams and their LISTEN connection (stopped first at shutdown). */
  readonly liveEvents: EventHub;
  close(): Promise<void>;
}

/** What tests and the demo may replace. Everything else is built from the config. */
export interface ContainerOverrides {
  log?: Logger;
  probes?: { mail?: Probe; ai?: Probe };
  oauth?: OAuthProvider;
  /** The watch control sign-in, disconnect and deletion use (the maintenance keeps the real watch). */
  mailWatch?: MailWatchControl;
  /** The AI feature's clock, and its provider or the real provider's request timeout. */
  ai?: { now?: () => Date; provider?: AiProvider; timeoutMs?: number };
  /** The live inbox's workers: `{ work: false }` stores jobs without running them (route tests). */
  liveInbox?: LiveInboxOptions;
  /** Open event streams allowed per session and per account (tests lower them). */
  streamLimits?: StreamLimits;
  /** Opened threads' bodies: the parser's bounds (small ones in tests). */
  mailBodies?: {
    parser?: BodyParserOptions;
    opens?: ThreadBodiesOptions;
    threadBodyBudget?: number;
    gate?: OpenGateOptions;
  };
  /** The mail quota's timing: a shorter provider window, a faster flush, the clock of its UTC day (tests). */
  mailQuota?: Pick<QuotaOptions, 'windowMs' | 'skewMs' | 'flushMs' | 'now'>;
  /** Analysis on arrival's workers and threads per job (tests). */
  autoTriage?: { workers?: number; perPass?: number; pollSeconds?: number; retryFirstMs?: number };
  /** The clock of the anonymous analytics budget's minute (tests move it instead of waiting a minute). */
  analytics?: { now?: () => Date };
}

export interface ContainerOptions {
  config: Readonly<Config>;
  orm: MikroORM;
  databaseUrl: string;
  overrides?: ContainerOverrides;
}

export function defaultProbes(config: Readonly<Config>): { mail: Probe; ai: Probe } {
  const aiBase = (config.openai.baseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
  return {
    mail: config.oauth.configured
      ? cachedProbe(httpProbe(`${config.gmailApiUrl}$discovery/rest?version=v1`))
      : notConfigured,
    ai: config.openai.configured
      ? cachedProbe(httpProbe(`${aiBase}/models`, { headers: { Authorization: `Bearer ${config.openai.apiKey}` } }))
      : notConfigured,
  };
}

/** The real AI provider, configured from the config (a `timeoutMs` passed in, by tests, wins over OPENAI_TIMEOUT_MS). */
export function defaultAiProvider(config: Readonly<Config>, log: Logger, timeoutMs?: number): AiProvider {
  const { apiKey, baseUrl, model } = config.openai;
  return createOpenAiProvider({ apiKey, baseUrl, model, log, timeoutMs: timeoutMs ?? config.timeoutsMs.ai });
}

/** The rate limiter's pool. A connection PostgreSQL drops (restart, 57P01) must never crash the process. */
function rateLimitPool(databaseUrl: string, log: Logger): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 5,
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: 30_000,
  });
  const warn = (err: Error) => log.warn(errorSummary(err), 'rate-limit pool client error');
  // The pool hears errors of idle clients only; a checked-out client raises 'error' on itself.
  pool.on('error', warn);
  pool.on('connect', (client) => client.on('error', warn));
  return pool;
}

export async function buildContainer(opts: ContainerOptions): Promise<Container> {
  const { config, orm, overrides = {} } = opts;
  if (!config.tokenKeys?.length) throw new Error('TOKEN_ENCRYPTION_KEY is required');

  // Infrastructure.
  const log = overrides.log ?? createLogger({ level: config.logLevel });
  const pool = rateLimitPool(opts.databaseUrl, log);
  const prepared = preparedRunner(orm);
  const metrics = createMetrics();
  const probes = { ...defaultProbes(config), ...overrides.probes };
  const pingDatabase = async () => {
    await Promise.race([
      orm.em.getConnection().execute('select 1'),
      new Promise((_, reject) => setTimeout(() => reject(new Error('database ping timed out')), 2_000).unref()),
    ]);
  };

  // Providers and credentials.
  const tokenCrypto = createTokenCrypto(config.tokenKeys, { acceptV1: config.tokenAcceptV1 });
  const oauth = overrides.oauth ?? createOAuthProvider(config);
  const credentials = createCredentialsService({ orm, crypto: tokenCrypto, oauth, log });
  const bodies = createBodyParser(overrides.mailBodies?.parser);
  const quotaNow = overrides.mailQuota?.now ?? (() => new Date());
  const pacer = createQuotaPacer(createQuotaLedger(orm), {
    profile: config.gmailQuota.profile,
    userUnits: config.gmailQuota.userUnitsPerMinute,
    dailyBudget: config.gmailQuota.dailyUnitBudget,
    windowMs: config.gmailQuota.windowSeconds * 1000,
    ...overrides.mailQuota,
    now: quotaNow,
    onSpend: metrics.gmailUnits,
    onFlushError: (err) =>
      log.warn(errorSummary(err), 'flushing the mail quota day ledger failed; retrying with the next flush'),
  });
  metrics.readMailQuota({
    budget: config.gmailQuota.dailyUnitBudget,
    today: () => unitsOfDay(orm.em.fork(), quotaNow().toISOString().slice(0, 10)),
  });
  const gmail = createGmailFactory({ rootUrl: config.gmailApiUrl, bodies, timeoutMs: config.timeoutsMs.mail, pacer });
  const aiProvider = overrides.ai?.provider ?? defaultAiProvider(config, log, overrides.ai?.timeoutMs);

  // Mail: one sync service for the route and the live inbox; bodies on first open.
  // Analysis on arrival is built with the AI feature, below; stored mail asks it for a pass.
  let triage: AutoTriageWorker | undefined;
  // Never the caller's failure (a sync's commit, a settings change): a lost nudge waits for the next stored mail.
  const nudgeTriage = async (accountId: string, reason?: 'arrival' | 'setting') =>
    triage
      ?.nudge(accountId, reason)
      .catch((err: unknown) => log.warn({ accountId, ...errorSummary(err) }, 'asking for analysis on arrival failed'));
  const sync = createSyncService({
    orm,
    gmail,
    credentials,
    log,
    leaseSeconds: config.syncLeaseSeconds,
    onStored: nudgeTriage,
  });
  const threadBodies = createThreadBodies({ gmail, credentials, ...overrides.mailBodies?.opens });
  const liveInbox = await createLiveInbox({
    config,
    orm,
    databaseUrl: opts.databaseUrl,
    credentials,
    gmail,
    sync,
    log,
    metrics,
    options: overrides.liveInbox,
  });
  metrics.readCluster(liveInboxReadings(orm, liveInbox.engine));
  const liveEvents = createEventHub({ databaseUrl: opts.databaseUrl, log });

  const ai = createAiFeature({
    provider: aiProvider,
    limits: config.aiBudget,
    orm,
    log,
    metrics,
    ensureBodies: threadBodies.ensure,
    now: overrides.ai?.now,
  });
  triage = createAutoTriageWorker({
    orm,
    engine: liveInbox.engine,
    log,
    metrics,
    concurrency: overrides.autoTriage,
    triage: createAutoTriage({
      orm,
      analysis: ai.analysis,
      share: config.aiBudget.autoShare,
      aiConfigured: () => ai.provider.configured,
      log,
      retryFirstMs: overrides.autoTriage?.retryFirstMs,
    }),
  });
  const services: Services = Object.freeze({
    auth: createAuthService({
      oauth,
      credentials,
      log,
      stateTtlSeconds: config.oauth.stateTtlSeconds,
      watch: overrides.mailWatch ?? liveInbox.watch,
      startSync: (accountId) => liveInbox.engine.enqueueSync({ accountId, reason: 'sign-in' }),
    }),
    sync,
    threads: createThreadReads({
      prepared,
      bodies: threadBodies,
      bodyBudget: overrides.mailBodies?.threadBodyBudget,
      gate: overrides.mailBodies?.gate,
    }),
    events: createMailEventsService({
      orm,
      hub: liveEvents,
      limits: {
        ...DEFAULT_STREAM_LIMITS,
        maxStreamMs: SESSION_IDLE_MS,
        perInstance: config.eventStreamsPerInstance,
        ...overrides.streamLimits,
      },
    }),
    ai,
    settings: createSettingsService({
      now: overrides.ai?.now,
      onAutoTriage: (accountId) => nudgeTriage(accountId, 'setting'),
    }),
    analytics: createAnalyticsService({
      prepared,
      anonymousPerMinute: config.rateLimit.analyticsAnonymousPerMinute,
      now: overrides.analytics?.now,
      onDrop: metrics.analyticsDropped,
    }),
    incidents: createIncidentService({ log }),
    statusAdmin: createStatusAdmin(config.statusAdminToken),
    health: createHealthService({ pingDatabase, mail: probes.mail, ai: probes.ai }),
  });

  // The event hub listens from start-up and, last in the list, stops first.
  const triageWorkers =
    (overrides.liveInbox?.work ?? config.backgroundWorkers)
      ? [{ start: () => triage!.start(), stop: async () => undefined }]
      : [];
  const workers = Object.freeze([
    ...liveInbox.workers,
    ...triageWorkers,
    { start: () => liveEvents.start(), stop: () => liveEvents.stop() },
  ]);
  return Object.freeze({
    config,
    log,
    orm,
    prepared,
    pool,
    rateLimits: createRateLimits({ pool, global: config.rateLimit }),
    sessions: createSessions(orm, prepared, config),
    tokenCrypto,
    oauth,
    credentials,
    threadBodies,
    services,
    liveInbox,
    workers,
    metrics,
    liveEvents,
    async close() {
      for (const w of [...workers].reverse()) await w.stop();
      await pacer.close();
      await bodies.close();
      await pool.end();
      await orm.close(true);
    },
  });
}
