/**
 * The measurements: the thread list under load (autocannon, service and bare floor), its
 * query plans, one sync call against the slow mail stand-in, and the notification poller
 * draining a burst of notifications.
 */
import autocannon from 'autocannon';
import type pg from 'pg';
import type { GmailStandIn, RecordedRequest } from '../stand-ins/gmail.stand-in.ts';
import type { PubSubStandIn } from '../stand-ins/pubsub.stand-in.ts';
import { cpuMs, freshIp, postgresCpu, postgresCpuDelta, sampleRss, statementDelta, statementSnapshot, type BenchDatabase, type NodeProcess, type SignedIn } from './infra.ts';

// ------------------------------------------------------------------ thread list under load

export interface LoadResult {
  target: 'service' | 'service-many' | 'bare';
  /** Distinct clients (session and address) the requests rotate over; 1: every request the same client. */
  clients: number;
  connections: number;
  seconds: number;
  requests: number;
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; p99_9: number; max: number; mean: number };
  errors: number;
  non2xx: number;
  timeouts: number;
  /** Statements the database ran per request (pg_stat_statements), when known. */
  statementsPerRequest: number | null;
  statements: { query: string; calls: number }[] | null;
  /** CPU time per request of the server process and of the database backends (approximate, /proc ticks). */
  cpuMsPerRequest: { server: number | null; database: number | null };
  rss?: { peak: number | null; mean: number | null; before: number | null; after: number | null };
}

export async function loadTest(opts: {
  target: LoadResult['target'];
  url: string;
  headers?: Record<string, string>;
  /** Per-request headers in rotation (a session cookie and client address each). */
  clients?: Record<string, string>[];
  connections: number;
  seconds: number;
  warmupSeconds: number;
  db: BenchDatabase;
  process: NodeProcess;
  /** Sample the server's resident memory during the run. */
  memory?: boolean;
}): Promise<LoadResult> {
  let next = 0;
  const clients = opts.clients;
  const rotate = clients?.length
    ? [{ method: 'GET', setupRequest: (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...req.headers, ...clients[next++ % clients.length] } }) }]
    : undefined;
  const base = { url: opts.url, connections: opts.connections, headers: opts.headers, pipelining: 1, timeout: 10, ...(rotate ? { requests: rotate } : {}) };
  if (opts.warmupSeconds > 0) await autocannon({ ...base, duration: opts.warmupSeconds });
  const before = await statementSnapshot(opts.db);
  const rssBefore = opts.process.rss();
  const sampler = opts.memory ? sampleRss(opts.process.pid) : undefined;
  const cpu0 = cpuMs(opts.process.pid);
  const pg0 = postgresCpu(opts.db.name);
  const r = await autocannon({ ...base, duration: opts.seconds });
  const cpu1 = cpuMs(opts.process.pid);
  const pg1 = postgresCpu(opts.db.name);
  const rss = sampler?.stop();
  const after = await statementSnapshot(opts.db);
  const statements = statementDelta(before, after);
  const requests = r.requests.total;
  return {
    target: opts.target,
    clients: clients?.length || 1,
    connections: opts.connections,
    seconds: opts.seconds,
    requests,
    rps: requests / opts.seconds,
    latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, p99_9: r.latency.p99_9, max: r.latency.max, mean: r.latency.mean },
    errors: r.errors,
    non2xx: r.non2xx,
    timeouts: r.timeouts,
    statementsPerRequest: statements && requests ? statements.reduce((a, s) => a + s.calls, 0) / requests : null,
    statements: statements?.slice(0, 12) ?? null,
    cpuMsPerRequest: {
      server: cpu0 !== null && cpu1 !== null && requests ? (cpu1 - cpu0) / requests : null,
      database: requests ? postgresCpuDelta(pg0, pg1) / requests : null,
    },
    ...(rss ? { rss: { ...rss, before: rssBefore, after: opts.process.rss() } } : {}),
  };
}

/** The list statement and its parameters, as the server under test sends them. */
export interface ListStatement {
  sql: string;
  params(accountId: string, page: { limit: number; offset: number }): unknown[];
  /** Settings the server's connections start with (`-c name=value` startup options), as [name, value]. */
  settings: [string, string][];
}

export interface Explained {
  plan: string;
  seqScan: boolean;
  executionMs: number | null;
}

let explained = 0;

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the list statement for an account, as the service runs it: a
 * named prepared statement, executed a few times first, so that the plan shown is the one
 * the server's connections settle on (with the server's plan cache mode, or without it,
 * where PostgreSQL may switch to a generic plan after five runs).
 */
export async function explainList(pool: pg.Pool, list: ListStatement, accountId: string, limit: number): Promise<Explained> {
  const client = await pool.connect();
  const params = list.params(accountId, { limit, offset: 0 });
  // A name of its own each time: pg remembers which names it prepared on a connection.
  const name = `bench_list_${++explained}`;
  // EXPLAIN EXECUTE takes no bound parameters: the values go in as quoted literals.
  const execute = `execute ${name}(${params.map((v) => client.escapeLiteral(String(v))).join(', ')})`;
  try {
    for (const [setting, value] of list.settings) await client.query(`/*bench*/ select set_config($1, $2, false)`, [setting, value]);
    for (let i = 0; i < 6; i++) await client.query({ name, text: list.sql, values: params });
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`/*bench*/ explain (analyze, buffers) ${execute}`);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    const m = /Execution Time: ([\d.]+) ms/.exec(plan);
    return { plan, seqScan: /Seq Scan/.test(plan), executionMs: m ? Number(m[1]) : null };
  } finally {
    await client.query(`/*bench*/ deallocate ${name}`).catch(() => undefined);
    await client.query('/*bench*/ reset all').catch(() => undefined);
    client.release();
  }
}

// ------------------------------------------------------------------ one sync call

export interface SyncRun {
  kind: 'listing' | 'incremental';
  threads: number;
  status: number;
  messagesSynced: number;
  wallMs: number;
  providerRequests: number;
  providerByEndpoint: Record<string, number>;
  /** Sequential waves of provider requests (each costs one injected latency). */
  providerRoundTrips: number;
  /** Statements of the sync itself (the request's rate-limit and session statements left out). */
  syncStatements: number | null;
  /** Every statement the request caused. */
  requestStatements: number | null;
  statements: { query: string; calls: number }[] | null;
}

/**
 * Provider latency the call could not hide: the most requests that did not overlap in time
 * (each occupies [arrival, arrival + latency] at the stand-in), i.e. sequential round trips.
 */
export function roundTrips(requests: RecordedRequest[], latencyMs: number): number {
  const spans = requests.map((r) => [r.at, r.at + latencyMs] as const).sort((a, b) => a[1] - b[1]);
  let trips = 0;
  let end = -Infinity;
  for (const [start, finish] of spans) {
    if (start >= end) {
      trips++;
      end = finish;
    }
  }
  return trips;
}

const HTTP_LAYER = /rate_limits|from sessions|into sessions/;

export async function syncOnce(opts: {
  kind: 'listing' | 'incremental';
  threads: number;
  serverUrl: string;
  webOrigin: string;
  account: SignedIn;
  gmail: GmailStandIn;
  latencyMs: number;
  db: BenchDatabase;
}): Promise<SyncRun> {
  const { gmail, db } = opts;
  gmail.resetCounters();
  const before = await statementSnapshot(db);
  const t0 = performance.now();
  const res = await fetch(`${opts.serverUrl}/api/mail/sync`, {
    method: 'POST',
    headers: { Cookie: opts.account.cookie, 'X-CSRF-Token': opts.account.csrfToken, Origin: opts.webOrigin, 'X-Forwarded-For': freshIp() },
  });
  const body = (await res.json()) as { messagesSynced?: number };
  const wallMs = performance.now() - t0;
  const after = await statementSnapshot(db);
  const delta = statementDelta(before, after);
  const requests = [...gmail.requests];
  const byEndpoint: Record<string, number> = {};
  for (const r of requests) byEndpoint[r.endpoint] = (byEndpoint[r.endpoint] ?? 0) + 1;
  const sum = (xs: { calls: number }[]) => xs.reduce((a, s) => a + s.calls, 0);
  return {
    kind: opts.kind,
    threads: opts.threads,
    status: res.status,
    messagesSynced: body.messagesSynced ?? -1,
    wallMs,
    providerRequests: requests.length,
    providerByEndpoint: byEndpoint,
    providerRoundTrips: roundTrips(requests, Math.max(1, opts.latencyMs)),
    syncStatements: delta ? sum(delta.filter((s) => !HTTP_LAYER.test(s.query))) : null,
    requestStatements: delta ? sum(delta) : null,
    statements: delta,
  };
}

/** The account's sync state as before its first sync (the next call lists the inbox from the top). */
export async function resetToListing(pool: pg.Pool, accountId: string): Promise<void> {
  await pool.query(
    `/*bench*/ update sync_states set history_id = null, full_sync_page_token = null, full_sync_active = false, lease_owner = null, lease_until = null where account_id = $1`,
    [accountId],
  );
}

/** The account's checkpoint at the mailbox's current history id (the next call reads history from there). */
export async function checkpointAt(pool: pg.Pool, accountId: string, historyId: number): Promise<void> {
  await pool.query(
    `/*bench*/ update sync_states set history_id = $2, full_sync_page_token = null, full_sync_active = false, lease_owner = null, lease_until = null where account_id = $1`,
    [accountId, historyId],
  );
}

// ------------------------------------------------------------------ poller

export interface PollerResult {
  accounts: number;
  notifications: number;
  newMessages: number;
  latencyMs: number;
  /** From the first notification until every new message was stored (null: not within the time limit). */
  allStoredMs: number | null;
  /** Until the subscription was empty (every notification acknowledged). */
  drainedMs: number | null;
  syncs: number;
  providerRequests: number;
  providerByEndpoint: Record<string, number>;
  pubsub: { deliveries: number; acked: number };
}

export async function pollerBurst(opts: {
  accounts: SignedIn[];
  perAccount: number;
  gmail: GmailStandIn;
  pubsub: PubSubStandIn;
  subscription: string;
  pool: pg.Pool;
  latencyMs: number;
  setForwarding(on: boolean): () => number;
  countSyncs(sinceMs: number): Promise<number>;
  timeoutMs: number;
}): Promise<PollerResult> {
  const { gmail, pubsub, pool } = opts;
  const ids = opts.accounts.map((a) => a.accountId);
  const stored = async () =>
    Number((await pool.query<{ n: string }>('/*bench*/ select count(*) as n from mail_messages where account_id = any($1::uuid[])', [ids])).rows[0]!.n);
  const before = await stored();
  const expected = before + opts.accounts.length * opts.perAccount;
  gmail.setLatency(opts.latencyMs);
  gmail.resetCounters();
  pubsub.resetCounters();
  const published = opts.setForwarding(true);
  const startedAt = Date.now();
  const t0 = performance.now();
  for (let i = 0; i < opts.perAccount; i++) {
    for (const a of opts.accounts) gmail.addMessage(a.email, { subject: `Burst ${i} for ${a.email}` });
  }
  let allStoredMs: number | null = null;
  let drainedMs: number | null = null;
  const deadline = t0 + opts.timeoutMs;
  while (performance.now() < deadline && (allStoredMs === null || drainedMs === null)) {
    await new Promise((r) => setTimeout(r, 50));
    if (allStoredMs === null && (await stored()) >= expected) allStoredMs = performance.now() - t0;
    const s = pubsub.stats(opts.subscription);
    if (drainedMs === null && published() >= opts.accounts.length * opts.perAccount && s.available + s.leased === 0) drainedMs = performance.now() - t0;
  }
  opts.setForwarding(false);
  const requests = [...gmail.requests];
  const byEndpoint: Record<string, number> = {};
  for (const r of requests) byEndpoint[r.endpoint] = (byEndpoint[r.endpoint] ?? 0) + 1;
  const s = pubsub.stats(opts.subscription);
  return {
    accounts: opts.accounts.length,
    notifications: published(),
    newMessages: opts.accounts.length * opts.perAccount,
    latencyMs: opts.latencyMs,
    allStoredMs,
    drainedMs,
    syncs: await opts.countSyncs(startedAt),
    providerRequests: requests.length,
    providerByEndpoint: byEndpoint,
    pubsub: { deliveries: s.deliveries, acked: s.acked },
  };
}
