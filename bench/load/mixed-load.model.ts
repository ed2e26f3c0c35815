/**
 * The mixed load run's vocabulary: its routes and their mix, options, the per-request samples,
 * the accounts the clients use, the result's shape, and the small statistics it is built with.
 */

export type Route = 'list' | 'detail' | 'session' | 'health' | 'analytics' | 'sync' | 'analyze';
export const ROUTES: Route[] = ['list', 'detail', 'session', 'health', 'analytics', 'sync', 'analyze'];

/** One client's repeating schedule: 50 requests. */
export const MIX: Record<Route, number> = {
  list: 14,
  detail: 9,
  session: 6,
  health: 5,
  analytics: 10,
  sync: 3,
  analyze: 3,
};

export interface LoadOptions {
  durationS: number;
  rate: number;
  restartAtS?: number;
  restartDownS?: number;
  accounts?: number;
  clients?: number;
  /** Messages seeded per mailbox before the run. */
  seed?: number;
  aiLatencyMs?: number;
  /** A new upstream message every this many ms (0: none). */
  mailEveryMs?: number;
  /** fsync/synchronous_commit off (tests); default false for the benchmark. */
  fast?: boolean;
  requestTimeoutMs?: number;
  /** Progress lines on stderr. */
  verbose?: boolean;
}

export interface Sample {
  /** ms since the run started. */
  t: number;
  route: Route;
  status: number;
  code?: string;
  ms: number;
  failure?: string;
  retryAfter?: boolean;
  key?: string;
}

export interface RouteStats {
  count: number;
  ok: number;
  busy: number;
  errors: number;
  outcomes: Record<string, number>;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface LoadResult {
  config: Required<Omit<LoadOptions, 'verbose'>> & { clients: number };
  environment: { node: string; cpus: number; loadavgStart: number[]; loadavgEnd: number[]; startedAt: string };
  run: {
    requests: number;
    achievedRps: number;
    schedulerMaxLagMs: number;
    durationMs: number;
    serviceCpuSeconds: number;
    serviceCpuMsPerRequest: number;
  };
  restart: {
    stopAtMs: number;
    stoppedAtMs: number;
    startAtMs: number;
    startedAtMs: number;
    recoveredAtMs: number;
    windowMs: [number, number];
    recoveryAfterStartMs: number;
  };
  outside: {
    requests: number;
    errors: number;
    errorRate: number;
    /** The errors by kind: 503 SERVICE_UNAVAILABLE with Retry-After (e.g. no pool connection within its timeout), no answer within the client timeout, a dropped or refused connection, anything else. */
    errorKinds: { unavailable503: number; timeouts: number; network: number; other: number };
    busy: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
    errorSamples: string[];
  };
  inside: {
    requests: number;
    ok: number;
    unavailable503: number;
    busy: number;
    /** Anything else that is not a success: by kind, and the first few. */
    otherErrors: number;
    otherKinds: { timeouts: number; network: number; other: number };
    otherErrorSamples: string[];
    maxMs: number;
  };
  routes: Record<Route, RouteStats>;
  /** Per 10 s of start time: what was sent then, how it ended, and the service's CPU and the machine's load. */
  timeline: {
    fromS: number;
    requests: number;
    errors: number;
    busy: number;
    unavailable: number;
    p50: number;
    p99: number;
    serviceCpuPct: number;
    load1: number;
  }[];
  memory: {
    samples: { t: number; rssMb: number; cpuPct: number; load1: number }[];
    afterWarmupMb: number;
    endMb: number;
    peakMb: number;
    slopeMbPerMin: number;
    slopeSecondHalfMbPerMin: number;
    /** The service's V8 heap in use right after a forced full GC, every 10 s. */
    heapAfterGc: { t: number; mb: number }[];
    heapAfterGcFirstMb: number;
    heapAfterGcLastMb: number;
    heapAfterGcSlopeMbPerMin: number;
  };
  writes: {
    analyticsAcknowledged: number;
    analyticsMissing: number;
    upstreamMessages: number;
    upstreamMissing: number;
    duplicates: number;
  };
  service: {
    alive: boolean;
    /** How the process ended during the run (code, signal, when), null when it was alive at the end. */
    exit: string | null;
    warnings: Record<string, number>;
    http500: number;
    warningSamples: string[];
    stderr: string[];
  };
}

/** Anything but a 2xx, except RATE_LIMITED on sync (another sync of the account is running). */
export const isBusy = (s: Sample) => s.status === 429 && s.code === 'RATE_LIMITED' && s.route === 'sync';
export const isOk = (s: Sample) => s.status >= 200 && s.status < 300;
export const isError = (s: Sample) => !isOk(s) && !isBusy(s);

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Least-squares slope of y over x. */
export function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const num = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  return den ? num / den : 0;
}

export function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export interface Account {
  email: string;
  cookie: string;
  csrfToken: string;
  threads: string[];
}

/** Times of the restart, in ms since the load started (a type, not an interface: the result rounds it as a record). */
export type RestartTimes = {
  stopAtMs: number;
  stoppedAtMs: number;
  startAtMs: number;
  startedAtMs: number;
  recoveredAtMs: number;
};

export type MemorySample = LoadResult['memory']['samples'][number];
