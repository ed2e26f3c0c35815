/**
 * Configuration: every variable of runtime-contract part 2, parsed once by loadConfig(env)
 * (never on import). Bad values stop start-up with one ConfigError naming every bad
 * variable; nothing is silently defaulted.
 */
import { z } from 'zod';

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const blankToUndefined = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);
const opt = <T extends z.ZodType>(schema: T) => z.preprocess(blankToUndefined, schema.optional());
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const intIn = (min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max));
const key32 = z.string().refine((v) => /^[A-Za-z0-9+/_-]+={0,2}$/.test(v) && Buffer.from(v, 'base64').length === 32, {
  message: 'must be 32 bytes, base64-encoded',
});

const otlpProtocol = z.enum(['http/protobuf', 'http/json', 'grpc'], {
  error: 'must be http/protobuf, http/json or grpc',
});

const envSchema = z.object({
  PORT: opt(intIn(0, 65535)),
  HOST: opt(z.string()),
  PUBLIC_BASE_URL: opt(httpUrl),
  WEB_ORIGIN: opt(httpUrl),
  STATUS_PAGE_URL: opt(httpUrl),
  NODE_ENV: opt(z.string()),
  SESSION_SECRET: opt(
    z
      .string()
      .refine(
        (v) => v.split(',').every((k) => k.trim().length >= 16),
        'every comma-separated key must be at least 16 characters',
      ),
  ),
  TOKEN_ENCRYPTION_KEY: opt(
    z
      .string()
      .refine(
        (v) => v.split(',').every((k) => key32.safeParse(k.trim()).success),
        'must be 32 bytes, base64-encoded (comma-separate several, newest first, to rotate)',
      ),
  ),
  TOKEN_ACCEPT_V1: opt(z.enum(['true', 'false'], { error: 'must be true or false' })),
  TRUST_PROXY: opt(z.enum(['true', 'false'], { error: 'must be true or false' })),
  TRUST_PROXY_HOPS: opt(intIn(1, 10)),
  BACKGROUND_WORKERS: opt(z.enum(['true', 'false'], { error: 'must be true or false' })),
  DATABASE_URL: opt(z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' })),
  GOOGLE_CLIENT_ID: opt(z.string()),
  GOOGLE_CLIENT_SECRET: opt(z.string()),
  GOOGLE_REDIRECT_URI: opt(httpUrl),
  GOOGLE_AUTH_URL: opt(httpUrl),
  GOOGLE_TOKEN_URL: opt(httpUrl),
  GOOGLE_REVOKE_URL: opt(httpUrl),
  GOOGLE_USERINFO_URL: opt(httpUrl),
  GMAIL_API_URL: opt(httpUrl),
  GMAIL_QUOTA_PROFILE: opt(z.enum(['2026', 'legacy'], { error: 'must be 2026 or legacy' })),
  GMAIL_USER_UNITS_PER_MINUTE: opt(intIn(0, 100_000_000)),
  GMAIL_DAILY_UNIT_BUDGET: opt(intIn(1, 1_000_000_000_000)),
  GMAIL_QUOTA_WINDOW_SECONDS: opt(intIn(1, 60)),
  PUBSUB_PROJECT_ID: opt(z.string().regex(/^[a-z][a-z0-9-]{2,62}$/i, 'must be a project id')),
  PUBSUB_TOPIC: opt(z.string().regex(/^projects\/[^/]+\/topics\/[^/]+$/, 'must be projects/P/topics/T')),
  PUBSUB_SUBSCRIPTION: opt(
    z
      .string()
      .regex(
        /^([^/]+|projects\/[^/]+\/subscriptions\/[^/]+)$/,
        'must be a subscription id or projects/P/subscriptions/S',
      ),
  ),
  PUBSUB_EMULATOR_HOST: opt(z.string().regex(/^[^\s/:]+:\d{1,5}$/, 'must be host:port')),
  OPENAI_API_KEY: opt(z.string()),
  OPENAI_BASE_URL: opt(httpUrl),
  OPENAI_MODEL: opt(z.string().max(100)),
  RATE_LIMIT_MAX: opt(intIn(1, 1_000_000)),
  RATE_LIMIT_WINDOW_SECONDS: opt(intIn(1, 86_400)),
  ANALYTICS_ANONYMOUS_PER_MINUTE: opt(intIn(0, 1_000_000)),
  AI_DAILY_TOKEN_BUDGET: opt(intIn(1, 1_000_000_000)),
  AI_MONTHLY_TOKEN_BUDGET: opt(intIn(1, 1_000_000_000)),
  AUTO_TRIAGE_BUDGET_SHARE: opt(
    z
      .string()
      .regex(/^(0(\.\d{1,6})?|1(\.0{1,6})?)$/, 'must be a number from 0 to 1')
      .transform(Number),
  ),
  STATUS_ADMIN_TOKEN: opt(z.string().min(16, 'must be at least 16 characters')),
  METRICS_TOKEN: opt(z.string().min(16, 'must be at least 16 characters')),
  OAUTH_STATE_TTL_SECONDS: opt(intIn(1, 86_400)),
  GOOGLE_TIMEOUT_MS: opt(intIn(100, 600_000)),
  GMAIL_TIMEOUT_MS: opt(intIn(100, 600_000)),
  OPENAI_TIMEOUT_MS: opt(intIn(100, 600_000)),
  PUBSUB_TIMEOUT_MS: opt(intIn(100, 600_000)),
  SYNC_LEASE_SECONDS: opt(intIn(1, 3_600)),
  JOB_SUPERVISE_SECONDS: opt(intIn(1, 600)),
  EVENT_STREAMS_PER_INSTANCE: opt(intIn(1, 100_000)),
  LOG_LEVEL: opt(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])),
  LOG_FORMAT: opt(z.enum(['json', 'pretty'])),
  // OpenTelemetry's own variables, as far as they decide whether tracing runs (and are worth
  // refusing when mistyped); the SDK and the exporter read the rest themselves (infra/tracing.ts).
  OTEL_SDK_DISABLED: opt(z.enum(['true', 'false'], { error: 'must be true or false' })),
  OTEL_TRACES_EXPORTER: opt(z.enum(['otlp', 'console', 'none'], { error: 'must be otlp, console or none' })),
  OTEL_EXPORTER_OTLP_ENDPOINT: opt(httpUrl),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: opt(httpUrl),
  OTEL_EXPORTER_OTLP_PROTOCOL: opt(otlpProtocol),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: opt(otlpProtocol),
  TRUST_TRACEPARENT: opt(z.enum(['true', 'false'], { error: 'must be true or false' })),
});

export interface Config {
  port: number;
  host: string;
  publicBaseUrl: string;
  webOrigin: string;
  statusPageUrl: string;
  production: boolean;
  /** Cookie signing keys, newest first. Undefined only before dev secrets are filled in. */
  sessionKeys?: string[];
  /** AES-256-GCM keys, newest first; the first encrypts, all decrypt. */
  tokenKeys?: Buffer[];
  /** Decrypt provider tokens of the unbound v1 format (TOKEN_ACCEPT_V1; default: not in production). */
  tokenAcceptV1: boolean;
  trustProxy: boolean;
  /** With trustProxy: how many trusted proxies append to X-Forwarded-For (the client is that many entries from the right). */
  trustProxyHops: number;
  /** Run the job workers (sync, schedules, notification intake) in this process; false: an HTTP-only instance. */
  backgroundWorkers: boolean;
  databaseUrl?: string;
  secureCookies: boolean;
  oauth: {
    configured: boolean;
    clientId?: string;
    clientSecret?: string;
    redirectUri: string;
    authUrl: string;
    tokenUrl: string;
    revokeUrl: string;
    userinfoUrl: string;
    stateTtlSeconds: number;
  };
  gmailApiUrl: string;
  /**
   * The mail provider's quota (runtime contract part 3 "Quota"): the profile's costs per method, the
   * per-user limit each account's calls are paced within across instances (0: unpaced), and the
   * deployment's daily budget past which bulk work waits for the next UTC day.
   */
  gmailQuota: {
    profile: '2026' | 'legacy';
    userUnitsPerMinute?: number;
    dailyUnitBudget: number;
    windowSeconds: number;
  };
  pubsub: { projectId?: string; topic?: string; subscription?: string; emulatorHost?: string };
  openai: { configured: boolean; apiKey?: string; baseUrl?: string; model: string };
  /** Each provider's request timeout (ms; a Pub/Sub pull waits this long for notifications); unset: the provider module's default. */
  timeoutsMs: { identity?: number; mail?: number; ai?: number; queue?: number };
  /** Length of a sync's lease (s), renewed by its holder: a holder that died lets go within it; unset: LEASE_SECONDS. */
  syncLeaseSeconds?: number;
  /** Seconds between the job engine's supervision passes (a dead instance's job is handed on at the first after its heartbeat lapsed); unset: SUPERVISE_SECONDS. */
  jobSuperviseSeconds?: number;
  /** Open event streams one instance serves (sockets, memory); past it a new stream is SERVICE_UNAVAILABLE. */
  eventStreamsPerInstance: number;
  /** The global default per client; and anonymous analytics events stored per minute by the whole deployment (0: none). */
  rateLimit: { max: number; windowSeconds: number; analyticsAnonymousPerMinute: number };
  /** Per-account token budgets; `autoShare`: the share of the daily one analysis on arrival may use. */
  aiBudget: { daily: number; monthly: number; autoShare: number };
  statusAdminToken?: string;
  /** The scraper's credential for GET /metrics (read-only; never the status-admin one). */
  metricsToken?: string;
  logLevel: string;
  /** Log lines as JSON, or readable ('pretty'); unset: readable on a terminal, JSON otherwise. */
  logFormat?: 'json' | 'pretty';
  /**
   * OpenTelemetry tracing runs (and its packages load) only when an OTLP endpoint or an exporter
   * is named, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. A request's `traceparent`
   * is continued only with TRUST_TRACEPARENT=true (a trusted proxy sets it; a client could force sampling).
   */
  tracing: { enabled: boolean; trustTraceparent: boolean };
}

const originOf = (url: string) => new URL(url).origin;

/** Variables naming a provider's, the web app's or the trace collector's address: production speaks to each over TLS only. */
const TLS_ONLY = [
  'WEB_ORIGIN',
  'GOOGLE_REDIRECT_URI',
  'GOOGLE_AUTH_URL',
  'GOOGLE_TOKEN_URL',
  'GOOGLE_REVOKE_URL',
  'GOOGLE_USERINFO_URL',
  'GMAIL_API_URL',
  'OPENAI_BASE_URL',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
] as const;

/**
 * What production refuses (runtime contract part 2): missing secrets and database, an http
 * PUBLIC_BASE_URL (no Secure cookie, no HSTS), a WEB_ORIGIN left to its development default,
 * session keys too short to resist guessing, an http web origin, provider URL or OTLP endpoint
 * (tokens, codes, mail and spans would cross the network in the clear; no loopback exception:
 * nothing in production needs one) and PUBSUB_EMULATOR_HOST (plaintext gRPC, no credentials:
 * anyone who reaches it can forge change notifications).
 */
function productionProblems(env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  for (const k of ['SESSION_SECRET', 'TOKEN_ENCRYPTION_KEY', 'DATABASE_URL'] as const) {
    if (!env[k]?.trim()) problems.push(`${k}: required when NODE_ENV=production`);
  }
  if (!env.PUBLIC_BASE_URL?.trim()?.startsWith('https://'))
    problems.push('PUBLIC_BASE_URL: must be an https URL when NODE_ENV=production');
  if (!env.WEB_ORIGIN?.trim())
    problems.push('WEB_ORIGIN: required when NODE_ENV=production (the development default is http://localhost:5173)');
  for (const k of TLS_ONLY) {
    const v = env[k]?.trim();
    if (v && !v.toLowerCase().startsWith('https://'))
      problems.push(`${k}: must be an https URL when NODE_ENV=production`);
  }
  if (env.PUBSUB_EMULATOR_HOST?.trim())
    problems.push(
      'PUBSUB_EMULATOR_HOST: not allowed when NODE_ENV=production (the emulator is unauthenticated plaintext)',
    );
  const short = (env.SESSION_SECRET ?? '').split(',').some((k) => k.trim() && k.trim().length < 32);
  if (short) problems.push('SESSION_SECRET: every key must be at least 32 characters when NODE_ENV=production');
  return problems;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const parsed = envSchema.safeParse(env);
  const production = env.NODE_ENV === 'production';
  const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`);
  if (production) problems.push(...productionProblems(env));
  if (problems.length || !parsed.success) throw new ConfigError([...new Set(problems)]);
  const e = parsed.data;
  const port = e.PORT ?? 3000;
  const publicBaseUrl = (e.PUBLIC_BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const config: Config = {
    port,
    host: e.HOST ?? '127.0.0.1',
    publicBaseUrl,
    webOrigin: originOf(e.WEB_ORIGIN ?? 'http://localhost:5173'),
    statusPageUrl: e.STATUS_PAGE_URL ?? `${publicBaseUrl}/status`,
    production,
    sessionKeys: e.SESSION_SECRET?.split(',').map((k) => k.trim()),
    tokenKeys: e.TOKEN_ENCRYPTION_KEY?.split(',').map((k) => Buffer.from(k.trim(), 'base64')),
    tokenAcceptV1: e.TOKEN_ACCEPT_V1 ? e.TOKEN_ACCEPT_V1 === 'true' : !production,
    trustProxy: e.TRUST_PROXY === 'true',
    trustProxyHops: e.TRUST_PROXY_HOPS ?? 1,
    backgroundWorkers: e.BACKGROUND_WORKERS !== 'false',
    databaseUrl: e.DATABASE_URL,
    secureCookies: publicBaseUrl.startsWith('https:'),
    oauth: {
      configured: Boolean(e.GOOGLE_CLIENT_ID && e.GOOGLE_CLIENT_SECRET),
      clientId: e.GOOGLE_CLIENT_ID,
      clientSecret: e.GOOGLE_CLIENT_SECRET,
      redirectUri: e.GOOGLE_REDIRECT_URI ?? `${publicBaseUrl}/auth/provider/callback`,
      authUrl: e.GOOGLE_AUTH_URL ?? 'https://accounts.google.com/o/oauth2/v2/auth',
      tokenUrl: e.GOOGLE_TOKEN_URL ?? 'https://oauth2.googleapis.com/token',
      revokeUrl: e.GOOGLE_REVOKE_URL ?? 'https://oauth2.googleapis.com/revoke',
      userinfoUrl: e.GOOGLE_USERINFO_URL ?? 'https://openidconnect.googleapis.com/v1/userinfo',
      stateTtlSeconds: e.OAUTH_STATE_TTL_SECONDS ?? 600,
    },
    gmailApiUrl: (e.GMAIL_API_URL ?? 'https://gmail.googleapis.com/').replace(/\/*$/, '/'),
    gmailQuota: {
      profile: e.GMAIL_QUOTA_PROFILE ?? '2026',
      userUnitsPerMinute: e.GMAIL_USER_UNITS_PER_MINUTE,
      dailyUnitBudget: e.GMAIL_DAILY_UNIT_BUDGET ?? 80_000_000,
      // Google counts per minute; a shorter window scales the minute down (the bench), never for a real provider.
      windowSeconds: e.GMAIL_QUOTA_WINDOW_SECONDS ?? 60,
    },
    pubsub: {
      projectId: e.PUBSUB_PROJECT_ID,
      topic: e.PUBSUB_TOPIC,
      subscription: e.PUBSUB_SUBSCRIPTION,
      emulatorHost: e.PUBSUB_EMULATOR_HOST,
    },
    openai: {
      configured: Boolean(e.OPENAI_API_KEY),
      apiKey: e.OPENAI_API_KEY,
      baseUrl: e.OPENAI_BASE_URL,
      model: e.OPENAI_MODEL ?? 'gpt-4o-mini',
    },
    timeoutsMs: {
      identity: e.GOOGLE_TIMEOUT_MS,
      mail: e.GMAIL_TIMEOUT_MS,
      ai: e.OPENAI_TIMEOUT_MS,
      queue: e.PUBSUB_TIMEOUT_MS,
    },
    syncLeaseSeconds: e.SYNC_LEASE_SECONDS,
    jobSuperviseSeconds: e.JOB_SUPERVISE_SECONDS,
    eventStreamsPerInstance: e.EVENT_STREAMS_PER_INSTANCE ?? 2_000,
    // 600 a minute: ten signed-out page views a second, far above real traffic; at most ~0.85 GB of rows a day (docs/security.md).
    rateLimit: {
      max: e.RATE_LIMIT_MAX ?? 100,
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS ?? 60,
      analyticsAnonymousPerMinute: e.ANALYTICS_ANONYMOUS_PER_MINUTE ?? 600,
    },
    aiBudget: {
      daily: e.AI_DAILY_TOKEN_BUDGET ?? 20_000,
      monthly: e.AI_MONTHLY_TOKEN_BUDGET ?? 200_000,
      autoShare: e.AUTO_TRIAGE_BUDGET_SHARE ?? 0.5,
    },
    statusAdminToken: e.STATUS_ADMIN_TOKEN,
    metricsToken: e.METRICS_TOKEN,
    logLevel: e.LOG_LEVEL ?? 'info',
    logFormat: e.LOG_FORMAT,
    tracing: {
      enabled:
        e.OTEL_SDK_DISABLED !== 'true' &&
        e.OTEL_TRACES_EXPORTER !== 'none' &&
        Boolean(e.OTEL_EXPORTER_OTLP_ENDPOINT || e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || e.OTEL_TRACES_EXPORTER),
      trustTraceparent: e.TRUST_TRACEPARENT === 'true',
    },
  };
  return Object.freeze(config);
}
