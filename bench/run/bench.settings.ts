/**
 * The bench run's command-line options and the sizes, durations and latencies they select (full
 * or smoke), plus the progress line and the median the phases share.
 */
import { parseArgs } from 'node:util';
import { ALL_SCENARIOS } from '../scenario-names.ts';

export const { values: args } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    label: { type: 'string' },
    out: { type: 'string' },
    'database-url': { type: 'string' },
    only: { type: 'string' },
    /** Live events: idle streams for the memory reading, and accounts (one stream each for freshness). */
    'events-streams': { type: 'string' },
    'events-accounts': { type: 'string' },
    /** Issue 28's resync at scale: the inbox's messages (100,000 when `--only resync`). */
    'resync-messages': { type: 'string' },
    connections: { type: 'string' },
    duration: { type: 'string' },
    /** Write a V8 CPU profile of the server (and the bare handler) into the run's log directory. */
    profile: { type: 'boolean', default: false },
    /** Extra Node options for the server process only (space-separated), e.g. V8 heap flags to compare. */
    'server-node-args': { type: 'string' },
    /** Extra environment variables for the server process only (`KEY=VALUE`, space-separated), e.g. malloc tunables. */
    'server-env': { type: 'string' },
    /**
     * Run the server and the bare handler from another checkout of the project (a copy with
     * some changes reverted, to measure before and after with the same benchmark).
     */
    'server-root': { type: 'string' },
  },
});

const smoke = args.smoke === true;
export const settings = {
  mode: smoke ? 'smoke' : 'full',
  /** Stored threads of the measured accounts (item 4); the largest is item 1's account. */
  sizes: smoke ? [100, 300] : [1_000, 10_000, 100_000],
  otherAccounts: smoke ? 10 : 1_000,
  otherThreadsEach: smoke ? 10 : 100,
  listLimit: 50,
  connections: Number(args.connections ?? (smoke ? 5 : 50)),
  /** A second, lighter load on item 1's account: the latency below saturation. */
  moderateConnections: smoke ? 2 : 10,
  seconds: Number(args.duration ?? (smoke ? 1 : 10)),
  warmupSeconds: smoke ? 0 : 3,
  providerLatencyMs: smoke ? 5 : 50,
  syncRepeats: smoke ? 1 : 3,
  /** Item 3: accounts and new messages (one notification each) per account in the burst. */
  burstAccounts: smoke ? 4 : 100,
  burstPerAccount: smoke ? 2 : 10,
  /** How long items 3, 6 and 7 wait for the live inbox to store everything. */
  drainTimeoutMs: smoke ? 20_000 : 300_000,
  freshnessAccounts: smoke ? 5 : 1_000,
  freshnessPerSecond: smoke ? 5 : 20,
  freshnessSeconds: smoke ? 2 : 20,
  freshnessBurst: smoke ? 20 : 2_000,
  // Live events (issue 30): idle streams for the memory reading (5 per session), accounts with one stream each for freshness.
  eventsIdleStreams: Number(args['events-streams'] ?? (smoke ? 20 : 10_000)),
  eventsAccounts: Number(args['events-accounts'] ?? (smoke ? 5 : 1_000)),
  eventsPerSecond: smoke ? 5 : 20,
  eventsSeconds: smoke ? 2 : 20,
  /** Item 9: two instances share the live inbox's work; the full run lasts until a period of the 10-minute jobs has run. */
  twoAccounts: smoke ? 5 : 200,
  twoPerSecond: smoke ? 5 : 20,
  twoSeconds: smoke ? 2 : 20,
  twoUntilPeriods: !smoke,
  /** Item 10: interleaved rounds of the list load against the servers with tracing off, on, and on sampled (each round runs each). */
  tracingRounds: smoke ? 1 : 5,
  /**
   * Item 10's load: a fixed rate every server keeps up with, so that each serves the same
   * requests per second (its background work, the same per second, weighs the same per request).
   */
  tracingRate: smoke ? 20 : 200,
  tracingConnections: smoke ? 2 : 10,
  /**
   * The mail provider's per-user quota in every phase (issue 42): Google's 2026 profile
   * (messages.get 20 units, threads.get 40, messages.list 5, history.list 2, the profile and
   * labels.get 1, watch 100, stop 50) with its per-user limit, 6,000 units, counted in a 10 s
   * window instead of Google's minute: six times Google's rate, so that a backfill of thousands
   * of messages takes a minute, not six (30 messages/s instead of 5). The main server paces
   * every account within it (GMAIL_QUOTA_PROFILE=2026, GMAIL_QUOTA_WINDOW_SECONDS=10,
   * GMAIL_USER_UNITS_PER_MINUTE=6000: per window, the variable's minute scaled down with it);
   * the Gmail stand-in enforces the same window and limit in the backfill and resync phases
   * (`setQuota({ unitsPerWindow, windowMs, profile: '2026' })`; the other phases' stand-in
   * enforces none, their server still paces).
   */
  quotaProfile: '2026' as const,
  quotaWindowSeconds: 10,
  quotaUnitsPerWindow: 6_000,
  /**
   * Item 7's backfill at the quota above (2,000 messages: ~40,000 units, about 70 s at the
   * scaled limit). The smoke run's 400 need two windows, so that the pacing is exercised there too.
   */
  backfillMessages: smoke ? 400 : 2_000,
  /** A message arrives upstream this often while the backfill runs (its delay until stored is measured). */
  backfillArrivalMs: smoke ? 200 : 2_000,
  /** The signed-in user lists the inbox and opens a thread not yet opened this often while the backfill runs (each open timed). */
  backfillOpenEveryMs: smoke ? 250 : 2_000,
  /** The resync after the backfill: share of the inbox changed upstream while the history expired. */
  resyncChangeShare: 0.01,
  /**
   * Issue 28's resync at scale (bench/run/resync.phase.ts): the inbox is backfilled with the
   * pacing off and the stand-in only observing, then resynced at the quota above; 100,000
   * messages alone (`--only resync`), 20,000 in a run of every scenario.
   */
  resyncMessages: Number(args['resync-messages'] ?? (smoke ? 300 : args.only === 'resync' ? 100_000 : 20_000)),
  /** Item 8: every n-th corpus file for the token count (1: all ~6,000) and for the inbox the server backfills and opens. */
  corpusTokenStep: smoke ? 1000 : 1,
  corpusInboxStep: smoke ? 100 : 3,
  corpusIdleSeconds: smoke ? 1 : 10,
  /** The generated hostile mail's sizes (1: each at the size that hurt). */
  hostileScale: smoke ? 0.1 : 1,
  /** Item 11: rounds of each target (route, job, floor), syncs of one new message per round, and route syncs under the CPU profile. */
  syncCpuRounds: smoke ? 1 : 5,
  syncCpuSyncs: smoke ? 3 : 40,
  syncCpuProfileSyncs: smoke ? 3 : 100,
  /** Item 12: interleaved rounds of the 2,000-change burst drained by the service and by the floor; the floor's syncs in flight (the service's 8 workers x 8 jobs). */
  burstRounds: smoke ? 1 : 2,
  burstFloorConcurrency: 64,
  /**
   * Item 13: a heavy thread opened by 10 clients beside a normal user, in interleaved idle / heavy
   * windows. 100 x (64 KiB text + 128 KiB HTML) is ~26 MB as the provider answers it: under the
   * service's 32 MiB answer bound, so it is fetched, parsed, stored and served (a larger one is
   * refused unread and the refusal remembered, which costs nothing).
   */
  heavyMessages: smoke ? 5 : 100,
  heavyHtmlKiB: smoke ? 16 : 128,
  heavyTextKiB: smoke ? 8 : 64,
  heavyAttachments: 5,
  heavyClients: 10,
  heavySeconds: smoke ? 2 : 20,
  heavyRounds: smoke ? 1 : 2,
  /**
   * Item 13's second variant (issue 44, `heavyopens`): accounts, each opening this many of its heavy
   * threads (item 13's shape) at once, never opened before; sets of them a heavy window may open one
   * after the other (a set begins once the last has ended; at full size one set of 40 outlasts the
   * window, each parse taking seconds, so each round opens a set of its own); seconds of opens and
   * retries per heavy window (the opens in progress then awaited); an open's time out. Its rounds
   * and idle windows are item 13's.
   */
  heavyOpensAccounts: smoke ? 2 : 4,
  heavyOpensPerAccount: smoke ? 3 : 10,
  heavyOpensSets: smoke ? 2 : 1,
  heavyOpensSeconds: smoke ? 2 : 30,
  heavyOpensTimeoutMs: 300_000,
  /**
   * Item 15 (issue 45): analysis on arrival. Accounts with autoTriage on and new messages each (of
   * every 10: 7 eligible), the list's fixed rate and idle windows beside the burst, the OpenAI
   * stand-in's latency and fixed usage per call; the small-budget run's accounts and the analyses
   * its share makes room for.
   */
  triageAccounts: smoke ? 4 : 50,
  triagePerAccount: 10,
  triageListRate: smoke ? 10 : 20,
  triageIdleSeconds: smoke ? 1 : 20,
  triageAiLatencyMs: smoke ? 20 : 300,
  triagePromptTokens: 700,
  triageCompletionTokens: 80,
  triageSmallAccounts: smoke ? 2 : 10,
  triageSmallAnalyses: 5,
  rateLimitMax: 1_000_000,
  logLevel: 'info',
  /**
   * Production refuses the stand-ins' plaintext URLs and the Pub/Sub emulator; nothing else the
   * server does depends on NODE_ENV once its secrets are given (as here).
   */
  nodeEnv: 'development',
};
/** The stand-in's quota of the backfill and resync phases: the window and limit the main server paces every account within. */
export const benchQuota = {
  unitsPerWindow: settings.quotaUnitsPerWindow,
  windowMs: settings.quotaWindowSeconds * 1000,
  profile: settings.quotaProfile,
};
export type BenchQuota = typeof benchQuota;
/** "6,000 units per 10 s window (2026 profile)". */
export const quotaText = (q: { unitsPerWindow: number; windowMs: number; profile: string }) =>
  `${q.unitsPerWindow.toLocaleString('en-US')} units per ${q.windowMs / 1000} s window (${q.profile} profile)`;
export const only = new Set((args.only ?? ALL_SCENARIOS.join(',')).split(','));
export const WEB_ORIGIN = 'http://web.bench.example';

export const step = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};
