/**
 * What operators see at `GET /metrics` (Prometheus text format, prom-client), readable with
 * the scraper's own credential, `METRICS_TOKEN` (never the status-admin one: metrics.route.ts).
 * Counters and histograms are this instance's (scrape each instance); the `mia_sync_*` and
 * `mia_jobs_*` gauges are read from the database at scrape time and so are the cluster's, the
 * same on every instance. Node's own metrics (event-loop delay, heap, GC, handles) come with
 * prom-client's defaults.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Error codes that mean a provider failed or refused (the AI's and the mail provider's). */
const PROVIDER_CODES: Record<string, string> = {
  SYNC_FAILED: 'mail',
  MAIL_RATE_LIMITED: 'mail',
  AI_REQUEST_FAILED: 'ai',
  AI_RATE_LIMITED: 'ai',
};

export interface ClusterReadings {
  /** Jobs waiting or running per queue. */
  queueDepth(): Promise<Record<string, number>>;
  /** Over connected accounts: sync lag, backlog, dead-lettered jobs, watches not renewed, set-aside messages (domain/mail/sync/states/). */
  syncState(): Promise<{
    maxLagSeconds: number;
    backlogAccounts: number;
    deadLetteredAccounts: number;
    watchesExpiringAccounts: number;
    setAsideMessages: number;
    setAsideOldestSeconds: number;
  }>;
}

export interface Metrics {
  readonly registry: Registry;
  /** `route`: a bounded label (routeLabeler). */
  observeRequest(r: { route: string; method: string; status: number; seconds: number; code?: string }): void;
  /** A background sync job ended: why (caught-up, continued, busy, quota, disconnected, failed). */
  syncJob(outcome: string, code?: string): void;
  aiTokens(operation: string, usage: { promptTokens: number; completionTokens: number }): void;
  /** A pass of analysis on arrival ended (done, more, retry, budget, rate-limited, stopped) having analysed `analysed` threads. */
  autoTriage(outcome: string, analysed: number): void;
  /** Reads the cluster's gauges from the database at scrape time. */
  readCluster(readings: ClusterReadings): void;
  /** Mail quota units this instance spent on one call. */
  gmailUnits(method: string, purpose: string, units: number): void;
  /** The deployment's mail quota spend of the UTC day (read from the database at scrape time) against its budget. */
  readMailQuota(r: { budget: number; today(): Promise<number> }): void;
  /** An analytics event accepted and not stored: past the anonymous budget, or an unknown name. */
  analyticsDropped(reason: 'budget' | 'unknown_name'): void;
}

/**
 * Routes as a bounded label: a request's path with its ids (segments of 8+ characters that
 * hold a digit) as `:id`, when that is one of the app's route templates; else `unmatched`
 * (so that no caller can mint label values). `/trpc/...` is one route.
 */
export function routeLabeler(templates: Iterable<string>): (path: string) => string {
  const known = new Set([...templates].map((t) => t.replace(/\{[^}]+\}/g, ':id')));
  return (path) => {
    if (path.startsWith('/trpc/')) return '/trpc';
    const route = path.replace(/\/(?=[^/]*\d)[A-Za-z0-9_-]{8,}(?=\/|$)/g, '/:id');
    return known.has(route) ? route : 'unmatched';
  };
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  const requests = new Histogram({
    name: 'mia_http_request_duration_seconds',
    help: 'HTTP requests by route, method and status (count, and duration in seconds).',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const providerErrors = new Counter({
    name: 'mia_provider_errors_total',
    help: 'Provider failures and quota answers (mail, ai) by the error code they became.',
    labelNames: ['provider', 'code'],
    registers: [registry],
  });
  const triagePasses = new Counter({
    name: 'mia_auto_triage_passes_total',
    help: 'Passes of analysis on arrival, by how they ended.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const triaged = new Counter({
    name: 'mia_auto_triage_threads_total',
    help: 'Threads analysed on arrival.',
    registers: [registry],
  });
  const syncJobs = new Counter({
    name: 'mia_sync_jobs_total',
    help: 'Background sync jobs by outcome.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const tokens = new Counter({
    name: 'mia_ai_tokens_total',
    help: 'AI tokens spent, by operation and kind (prompt, completion).',
    labelNames: ['operation', 'kind'],
    registers: [registry],
  });
  const gmailUnits = new Counter({
    name: 'mia_gmail_units_total',
    help: 'Mail provider quota units this instance spent, by method and purpose (open, sync, incremental, watch, backfill, resync).',
    labelNames: ['method', 'purpose'],
    registers: [registry],
  });
  const analyticsDropped = new Counter({
    name: 'mia_analytics_dropped_total',
    help: "Analytics events this instance accepted and did not store: budget (past ANALYTICS_ANONYMOUS_PER_MINUTE, the deployment's anonymous budget), unknown_name.",
    labelNames: ['reason'],
    registers: [registry],
  });
  // Both series from the start, so that a rate over them reads 0 rather than nothing.
  for (const reason of ['budget', 'unknown_name']) analyticsDropped.inc({ reason }, 0);
  const providerError = (code?: string) => {
    const provider = code ? PROVIDER_CODES[code] : undefined;
    if (provider) providerErrors.inc({ provider, code });
  };
  return {
    registry,
    observeRequest({ route, method, status, seconds, code }) {
      requests.observe({ route, method, status: String(status) }, seconds);
      providerError(code);
    },
    autoTriage(outcome, analysed) {
      triagePasses.inc({ outcome });
      if (analysed) triaged.inc(analysed);
    },
    syncJob(outcome, code) {
      syncJobs.inc({ outcome });
      providerError(code);
    },
    gmailUnits(method, purpose, units) {
      gmailUnits.inc({ method, purpose }, units);
    },
    readMailQuota({ budget, today }) {
      new Gauge({
        name: 'mia_gmail_daily_unit_budget',
        help: 'Mail quota units the deployment may spend in a UTC day before bulk work waits (GMAIL_DAILY_UNIT_BUDGET).',
        registers: [registry],
      }).set(budget);
      new Gauge({
        name: 'mia_gmail_units_today',
        help: 'Mail quota units the whole deployment spent in the current UTC day (every instance, as flushed to the database).',
        registers: [registry],
        async collect() {
          // The database away: the gauge keeps its last reading rather than failing the scrape.
          const units = await today().catch(() => undefined);
          if (units !== undefined) this.set(units);
        },
      });
    },
    analyticsDropped(reason) {
      analyticsDropped.inc({ reason });
    },
    aiTokens(operation, usage) {
      tokens.inc({ operation, kind: 'prompt' }, usage.promptTokens);
      tokens.inc({ operation, kind: 'completion' }, usage.completionTokens);
    },
    readCluster(readings) {
      let sync: Promise<Awaited<ReturnType<ClusterReadings['syncState']>>> | undefined;
      // One query per scrape for the sync gauges.
      const syncOnce = () =>
        (sync ??= readings.syncState().finally(() => setTimeout(() => (sync = undefined), 1_000).unref()));
      const gauge = (
        name: string,
        help: string,
        pick: (s: Awaited<ReturnType<ClusterReadings['syncState']>>) => number,
      ) =>
        new Gauge({
          name,
          help,
          registers: [registry],
          async collect() {
            this.set(pick(await syncOnce()));
          },
        });
      gauge(
        'mia_sync_lag_max_seconds',
        'Longest time since a connected account last completed a sync.',
        (s) => s.maxLagSeconds,
      );
      gauge(
        'mia_sync_backlog_accounts',
        'Connected accounts with notified changes not yet synced.',
        (s) => s.backlogAccounts,
      );
      gauge(
        'mia_sync_dead_lettered_accounts',
        'Connected accounts whose sync job ran out of retries (dead-lettered) and waits for the quiet sweep.',
        (s) => s.deadLetteredAccounts,
      );
      gauge(
        'mia_mail_set_aside_messages',
        'Messages of connected accounts the provider would not return or that did not parse, set aside and retried on their own.',
        (s) => s.setAsideMessages,
      );
      gauge(
        'mia_mail_set_aside_oldest_seconds',
        'Age of the oldest set-aside message of a connected account (0 when there is none).',
        (s) => s.setAsideOldestSeconds,
      );
      // Renewal runs daily; a watch this close to its end without one means renewal stopped, and push with it.
      gauge(
        'mia_sync_watches_expiring_accounts',
        'Connected accounts whose mail watch lapses within 48 h (or has lapsed) and was not renewed in the last 24 h.',
        (s) => s.watchesExpiringAccounts,
      );
      new Gauge({
        name: 'mia_jobs_queued',
        help: 'Background jobs waiting or running, by queue.',
        labelNames: ['queue'],
        registers: [registry],
        async collect() {
          this.reset();
          for (const [queue, n] of Object.entries(await readings.queueDepth())) this.set({ queue }, n);
        },
      });
    },
  };
}
