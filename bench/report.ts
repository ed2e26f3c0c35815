/** The benchmark's result as data (written as JSON) and as the Markdown table (printed and written). */
import {
  renderLiveEvents,
  renderTracing,
  type AutoTriageResult,
  type LiveEventsResult,
  type BackfillResult,
  type BurstFloorResult,
  type CorpusResult,
  type Explained,
  type FreshnessResult,
  type HeavyOpensResult,
  type HeavyThreadResult,
  type LoadResult,
  type NotificationBurstResult,
  type ResyncScaleResult,
  type SyncCpuResult,
  type SyncRun,
  type TracingResult,
  type TwoInstancesResult,
} from './scenarios.ts';
import { renderStorage, type StorageReading } from './storage.ts';
import { renderBurstFloor, renderHeavyOpens, renderHeavyThread, renderSyncCpu } from './report-issue-rows.ts';
import { renderAutoTriage, renderBackfill, renderResyncScale } from './report-mail-rows.ts';
import { renderCorpus, renderTwoInstances } from './report-more-rows.ts';
import { f0, f1, f2, k, ok, pct } from './report-format.ts';

export interface BenchReport {
  startedAt: string;
  label: string | null;
  /** Set when the server ran from another checkout (--server-root). */
  serverRoot: string | null;
  machine: {
    cpuModel: string;
    cores: number;
    memoryGiB: number;
    node: string;
    os: string;
    commit: string;
    dirty: boolean;
    postgres: string;
    pgStatStatements: boolean;
    loadAverageAtStart: number[];
    loadAverageAtEnd: number[] | null;
  };
  settings: Record<string, unknown> & {
    sizes: number[];
    connections: number;
    seconds: number;
    providerLatencyMs: number;
    listLimit: number;
    rateLimitMax: number;
  };
  data: { threads: number; messages: number; accounts: number; seedMs: number };
  list: {
    threads: number;
    service: LoadResult;
    serviceMany?: LoadResult;
    serviceModerate?: LoadResult;
    bareModerate?: LoadResult;
    bare: LoadResult;
    ratio: number | null;
  }[];
  explain: ({ threads: number } & Explained)[];
  sync: { threads: number; kind: 'listing' | 'incremental'; wallMsMedian: number; runs: SyncRun[] }[];
  notifications: NotificationBurstResult | null;
  freshness: FreshnessResult | null;
  backfill: BackfillResult | null;
  resync?: ResyncScaleResult | null;
  corpus?: CorpusResult | null;
  twoInstances?: TwoInstancesResult | null;
  tracing?: TracingResult | null;
  syncCpu?: SyncCpuResult | null;
  burst?: BurstFloorResult | null;
  heavyThread?: HeavyThreadResult | null;
  heavyOpens?: HeavyOpensResult | null;
  liveEvents?: LiveEventsResult | null;
  autoTriage?: AutoTriageResult | null;
  storage?: StorageReading | null;
  memory: {
    afterStartMiB: number | null;
    idleMiB: number | null;
    loadPeakMiB: number | null;
    loadMeanMiB: number | null;
    afterLoadMiB: number | null;
  };
  /** Where the server's and the bare handler's logs of the run were written. */
  logs: string;
}

export function renderMarkdown(r: BenchReport): string {
  const s = r.settings;
  const m = r.machine;
  const out: string[] = [];
  const largest = Math.max(...s.sizes);
  out.push(
    `# Benchmark ${r.startedAt.slice(0, 10)} — ${m.commit}${m.dirty ? ' (uncommitted changes)' : ''}${r.label ? ` — ${r.label}` : ''}`,
  );
  out.push('');
  out.push(
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}; Node ${m.node}; PostgreSQL ${m.postgres} (embedded, default durable settings${m.pgStatStatements ? ', pg_stat_statements' : ''}).`,
  );
  out.push(
    `Load average (1/5/15 min) at the start ${m.loadAverageAtStart.join(' / ')}, at the end ${m.loadAverageAtEnd?.join(' / ') ?? 'n/a'}: other work on the machine skews the numbers when these are well above 0.`,
  );
  if (r.serverRoot)
    out.push(
      `**The server and the bare handler ran from ${r.serverRoot}** (another checkout), not from the commit named above.`,
    );
  out.push(
    `Started ${r.startedAt}, mode ${String(s.mode)}. Server: \`node server/main.ts\` with the node options of its checkout's start script (as npm start; under tsx for older checkouts) in its own process, NODE_ENV=${String(s.nodeEnv)}, LOG_LEVEL=${String(s.logLevel)} (to a file), RATE_LIMIT_MAX=${s.rateLimitMax} per 60 s (the load is one client), TRUST_PROXY=true (sign-ins and syncs each use their own client address).`,
  );
  out.push(
    `Data: ${r.data.threads} threads and ${r.data.messages} messages of ${r.data.accounts} accounts (measured accounts: ${s.sizes.map(k).join(' / ')} threads, one message each, 5 % archived; ${String(s.otherAccounts)} other accounts x ${String(s.otherThreadsEach)} threads), seeded with SQL in ${(r.data.seedMs / 1000).toFixed(1)} s, then VACUUM ANALYZE.`,
  );
  out.push(
    `Load: autocannon, ${s.connections} connections, ${s.seconds} s per target after ${String(s.warmupSeconds)} s warm-up, load generator on the same machine.`,
  );
  out.push('');

  if (r.list.length) {
    const big = r.list.find((l) => l.threads === largest) ?? r.list.at(-1)!;
    out.push(`## 1. Thread list — GET /api/mail/threads?limit=${s.listLimit}, ${k(big.threads)} threads`);
    out.push('');
    out.push(
      '| target | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx / errors | DB statements per request | CPU ms per request: server / database |',
    );
    out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    const names = {
      service: 'service, one client (one session, one address)',
      'service-many': `service, ${big.serviceMany?.clients ?? 0} clients (own session and address each)`,
      bare: 'bare Koa + pg, same SQL (floor)',
    };
    for (const l of [big.service, big.serviceMany, big.bare, big.serviceModerate, big.bareModerate].filter(
      (x): x is LoadResult => x !== undefined,
    )) {
      out.push(
        `| ${names[l.target]}${l.connections !== s.connections ? `, **${l.connections} connections**` : ''} | ${f0(l.rps)} | ${l.latencyMs.p50} | ${l.latencyMs.p90} | ${l.latencyMs.p99} | ${l.latencyMs.max} | ${l.non2xx} / ${l.errors + l.timeouts} | ${f1(l.statementsPerRequest)} | ${f2(l.cpuMsPerRequest?.server)} / ${f2(l.cpuMsPerRequest?.database)} |`,
      );
    }
    out.push('');
    const manyRatio = big.serviceMany && big.bare.rps ? big.serviceMany.rps / big.bare.rps : null;
    out.push(
      `Rows: ${s.connections} connections unless marked. In a closed loop the mean latency is connections / throughput (Little's law): p99 under 20 ms at ${s.connections} connections needs well over ${Math.round(s.connections / 0.02)} req/s.`,
    );
    out.push('');
    out.push(
      `Service / floor throughput: **${pct(big.ratio)}**${manyRatio != null ? ` (${pct(manyRatio)} with ${big.serviceMany!.clients} clients)` : ''}.`,
    );
    out.push('');
    const many = big.serviceMany;
    const manyShare = many && big.service.rps ? many.rps / big.service.rps : null;
    const goals: [string, string, boolean][] = [
      ['one client ≥ 60 % of the floor', pct(big.ratio), (big.ratio ?? 0) >= 0.6],
      [`${many?.clients ?? 50} clients ≥ 85 % of one client`, pct(manyShare), (manyShare ?? 0) >= 0.85],
      [
        `${many?.clients ?? 50} clients ≤ 1.3 statements per request`,
        f1(many?.statementsPerRequest),
        (many?.statementsPerRequest ?? Infinity) <= 1.3,
      ],
      [
        `p99 ≤ 15 ms at ${big.serviceModerate?.connections ?? 10} connections`,
        `${big.serviceModerate?.latencyMs.p99 ?? '–'} ms (floor ${big.bareModerate?.latencyMs.p99 ?? '–'} ms)`,
        (big.serviceModerate?.latencyMs.p99 ?? Infinity) <= 15,
      ],
    ];
    out.push('| goal | measured | met |');
    out.push('|---|---:|---|');
    for (const [goal, measured, met] of goals) out.push(`| ${goal} | ${measured} | ${ok(met)} |`);
    out.push('');
    if (big.service.statements?.length) {
      out.push('<details><summary>Statements during the service run (pg_stat_statements)</summary>');
      out.push('');
      out.push('| calls | statement |');
      out.push('|---:|---|');
      for (const st of big.service.statements)
        out.push(`| ${st.calls} | \`${st.query.replace(/\s+/g, ' ').slice(0, 140).replace(/\|/g, '\\|')}\` |`);
      out.push('');
      out.push('</details>');
      out.push('');
    }
  }

  if (r.sync.length) {
    const lat = s.providerLatencyMs;
    out.push(`## 2. Sync — one 50-message call, stand-in with ${lat} ms per request`);
    out.push('');
    out.push(
      '| kind | stored threads | wall ms (median) | provider requests | provider round trips | DB statements (sync) | messages synced |',
    );
    out.push('|---|---:|---:|---:|---:|---:|---:|');
    for (const x of r.sync.filter((x) => x.threads === largest)) out.push(syncRow(x));
    out.push('');
    const worst = Math.max(...r.sync.map((x) => Math.max(...x.runs.map((run) => run.providerRoundTrips))));
    out.push(
      `"listing": the first page of a new inbox listing (profile, messages.list, 50 messages.get); "incremental": 50 new messages from history (history.list, 50 messages.get). Round trips: the most provider requests of the call that did not overlap in time, i.e. how many times the call waited the ${lat} ms latency one after another. Most round trips in any call: ${worst} (goal ≤ 4: ${ok(worst <= 4)}; a listing that ends within its call reads the history since it began once more, one round trip, so that it can answer hasMore false: the repeats after the first, on a store the first filled, do). Statements: every statement of the call (lease, credentials, reads, BEGIN/COMMIT, writes), the request's rate-limit and session statements left out.`,
    );
    out.push('');
  }

  if (r.notifications) {
    const p = r.notifications;
    out.push(
      `## 3. Notifications — ${p.notifications} notifications for ${p.accounts} accounts (${p.newMessages} new messages, ${p.latencyMs} ms provider latency)`,
    );
    out.push('');
    out.push(
      '| all messages stored | subscription drained | syncs | provider requests | history.list | messages.get | notifications per sync |',
    );
    out.push('|---:|---:|---:|---:|---:|---:|---:|');
    out.push(
      `| ${p.allStoredMs == null ? 'timeout' : `${(p.allStoredMs / 1000).toFixed(1)} s`} | ${p.drainedMs == null ? 'timeout' : `${(p.drainedMs / 1000).toFixed(1)} s`} | ${p.syncs} | ${p.providerRequests} | ${p.providerByEndpoint['history.list'] ?? 0} | ${p.providerByEndpoint['messages.get'] ?? 0} | ${p.syncs ? (p.notifications / p.syncs).toFixed(1) : 'n/a'} |`,
    );
    out.push('');
    out.push(
      `Notifications are published by the Gmail stand-in's watch (one per new message, round-robin over the accounts) into the Pub/Sub stand-in; the server's intake pulls them and turns them into sync jobs its workers run (default settings). Pub/Sub deliveries ${p.pubsub.deliveries}, acknowledged ${p.pubsub.acked}.`,
    );
    out.push('');
  }

  if (r.freshness) {
    const f = r.freshness;
    out.push(
      `## 6. Freshness — provider change to visible in the list, ${f.accounts} accounts, ${f.latencyMs} ms provider latency`,
    );
    out.push('');
    out.push('| load | changes | visible | p50 | p99 | max | goal p99 ≤ 1 s |');
    out.push('|---|---:|---:|---:|---:|---:|---|');
    const ms = (v: number | null) => (v == null ? 'n/a' : `${v} ms`);
    for (const p of f.phases) {
      const load = p.name === 'steady' ? `steady, ${f.steadyPerSecond}/s` : 'burst, all at once';
      out.push(
        `| ${load} | ${p.changes} | ${p.visible} | ${ms(p.p50Ms)} | ${ms(p.p99Ms)} | ${ms(p.maxMs)} | ${ok(p.visible === p.changes && p.p99Ms !== null && p.p99Ms <= 1000)} |`,
      );
    }
    out.push('');
    out.push(
      "Each change is a new message at the Gmail stand-in; its watch publishes the notification into the Pub/Sub stand-in; the server's intake turns it into a `mail-sync` job; a worker syncs the account. Delay: the stand-in's clock at the change to the row's `created_at`.",
    );
    out.push('');
    const costed = f.phases.filter((p) => p.cpuMs && p.historyLists);
    if (costed.length) {
      out.push(
        "What each phase cost, until its last change was stored (CPU from /proc; the stand-ins run in the bench process). The CPU floor is the CPU of all parts divided by the machine's cores: no schedule on this machine can store the last change sooner.",
      );
      out.push('');
      out.push(
        '| load | wall | syncs (history.list) | messages.get | CPU ms per sync: ' +
          Object.keys(costed[0]!.cpuMs!).join(' / ') +
          ' | CPU floor of the phase |',
      );
      out.push('|---|---:|---:|---:|---:|---:|');
      for (const p of costed) {
        const cpu = Object.values(p.cpuMs!);
        const floor = cpu.reduce((a, b) => a + b, 0) / r.machine.cores;
        out.push(
          `| ${p.name} | ${ms(p.wallMs ?? null)} | ${p.historyLists} | ${p.messageGets} | ${cpu.map((v) => (v / p.historyLists!).toFixed(2)).join(' / ')} | ${ms(Math.round(floor))} |`,
        );
      }
      out.push('');
    }
  }

  if (r.backfill) out.push(...renderBackfill(r.backfill));
  if (r.resync) out.push(...renderResyncScale(r.resync));

  out.push(...renderCorpus(r), ...renderTwoInstances(r));

  if (r.tracing) out.push(...renderTracing(r.tracing));
  if (r.syncCpu) out.push(...renderSyncCpu(r.syncCpu));
  if (r.burst) out.push(...renderBurstFloor(r.burst));
  if (r.heavyThread) out.push(...renderHeavyThread(r.heavyThread));
  if (r.heavyOpens) out.push(...renderHeavyOpens(r.heavyOpens));
  if (r.liveEvents) out.push(...renderLiveEvents(r.liveEvents));
  if (r.autoTriage) out.push(...renderAutoTriage(r.autoTriage));
  if (r.list.length > 1 || new Set(r.sync.map((x) => x.threads)).size > 1) {
    out.push('## 4. Cost growth — stored threads of the account');
    out.push('');
    out.push(
      '| threads | service req/s | service p50 / p99 ms | floor req/s | service / floor | server CPU ms per request: service / floor | list statement (EXPLAIN ANALYZE) ms | sync listing ms | sync incremental ms | sync statements (listing / incremental) |',
    );
    out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const size of s.sizes) {
      const l = r.list.find((x) => x.threads === size);
      const e = r.explain.find((x) => x.threads === size);
      const sl = r.sync.find((x) => x.threads === size && x.kind === 'listing');
      const si = r.sync.find((x) => x.threads === size && x.kind === 'incremental');
      out.push(
        `| ${k(size)} | ${f0(l?.service.rps)} | ${l ? `${l.service.latencyMs.p50} / ${l.service.latencyMs.p99}` : 'n/a'} | ${f0(l?.bare.rps)} | ${pct(l?.ratio)} | ${f2(l?.service.cpuMsPerRequest?.server)} / ${f2(l?.bare.cpuMsPerRequest?.server)} | ${e?.executionMs ?? 'n/a'} | ${f0(sl?.wallMsMedian)} | ${f0(si?.wallMsMedian)} | ${sl?.runs.at(-1)?.syncStatements ?? 'n/a'} / ${si?.runs.at(-1)?.syncStatements ?? 'n/a'} |`,
      );
    }
    out.push('');
  }
  const mem = r.memory;
  out.push('## 5. Memory — resident set of the server process');
  out.push('');
  out.push('| after start-up | idle (seeded, signed in) | under the load of item 1: peak / mean | after the load |');
  out.push('|---:|---:|---:|---:|');
  out.push(
    `| ${f0(mem.afterStartMiB)} MiB | ${f0(mem.idleMiB)} MiB | ${f0(mem.loadPeakMiB)} / ${f0(mem.loadMeanMiB)} MiB | ${f0(mem.afterLoadMiB)} MiB |`,
  );
  out.push('');
  out.push(
    `Goals: ≤ 160 MiB after start-up: ${ok((mem.afterStartMiB ?? Infinity) <= 160)}; ≤ 300 MiB at the peak under the list load: ${ok((mem.loadPeakMiB ?? Infinity) <= 300)}.`,
  );
  out.push('');
  if (r.storage) out.push(...renderStorage(r.storage));

  if (r.explain.length) {
    out.push(
      "## Query plans — the list statement (inbox total and page in one statement), EXPLAIN (ANALYZE, BUFFERS) of the named prepared statement with the server's connection settings",
    );
    out.push('');
    out.push(
      `Sequential scans: ${
        r.explain.every((e) => !e.seqScan)
          ? 'none'
          : `**yes** at ${r.explain
              .filter((e) => e.seqScan)
              .map((e) => k(e.threads))
              .join(', ')} threads`
      }.`,
    );
    out.push('');
    for (const e of [...r.explain].reverse()) {
      out.push(`${k(e.threads)} threads:`);
      out.push('');
      out.push('```');
      out.push(e.plan);
      out.push('```');
      out.push('');
    }
  }
  return out.join('\n');
}

function syncRow(x: BenchReport['sync'][number]): string {
  const last = x.runs.at(-1)!;
  const trips = [...new Set(x.runs.map((r) => r.providerRoundTrips))].join(', ');
  return `| ${x.kind} | ${k(x.threads)} | ${f0(x.wallMsMedian)} | ${last.providerRequests} | ${trips} | ${last.syncStatements ?? 'n/a'} | ${x.runs.map((r) => r.messagesSynced).join(', ')} |`;
}
