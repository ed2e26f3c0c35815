/**
 * Bench item 1: the thread list under autocannon load (the service or the bare floor) with the
 * CPU, memory and statements it cost, and EXPLAIN ANALYZE of the list statement.
 */
import autocannon from 'autocannon';
import type pg from 'pg';
import {
  cpuMs,
  postgresCpu,
  postgresCpuDelta,
  sampleRss,
  statementDelta,
  statementSnapshot,
  type BenchDatabase,
  type NodeProcess,
} from '../infra.ts';

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
  /** Requests per second over all connections (an open rate instead of as fast as answered). */
  rate?: number;
}): Promise<LoadResult> {
  let next = 0;
  const clients = opts.clients;
  const rotate = clients?.length
    ? [
        {
          method: 'GET',
          setupRequest: (req: { headers?: Record<string, string> }) => ({
            ...req,
            headers: { ...req.headers, ...clients[next++ % clients.length] },
          }),
        },
      ]
    : undefined;
  const base = {
    url: opts.url,
    connections: opts.connections,
    headers: opts.headers,
    pipelining: 1,
    timeout: 10,
    ...(rotate ? { requests: rotate } : {}),
    ...(opts.rate ? { overallRate: opts.rate } : {}),
  };
  if (opts.warmupSeconds > 0) await autocannon({ ...base, duration: opts.warmupSeconds });
  const before = await statementSnapshot(opts.db);
  const rssBefore = opts.process.rss();
  const sampler = opts.memory ? sampleRss(opts.process.pid) : undefined;
  const cpu0 = cpuMs(opts.process.pid);
  const pg0 = postgresCpu(opts.db.name, opts.db.postmasterPid);
  const r = await autocannon({ ...base, duration: opts.seconds });
  const cpu1 = cpuMs(opts.process.pid);
  const pg1 = postgresCpu(opts.db.name, opts.db.postmasterPid);
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
    latencyMs: {
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      p99_9: r.latency.p99_9,
      max: r.latency.max,
      mean: r.latency.mean,
    },
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
export async function explainList(
  pool: pg.Pool,
  list: ListStatement,
  accountId: string,
  limit: number,
): Promise<Explained> {
  const client = await pool.connect();
  const params = list.params(accountId, { limit, offset: 0 });
  // A name of its own each time: pg remembers which names it prepared on a connection.
  const name = `bench_list_${++explained}`;
  // EXPLAIN EXECUTE takes no bound parameters: the values go in as quoted literals.
  const execute = `execute ${name}(${params.map((v) => client.escapeLiteral(String(v))).join(', ')})`;
  try {
    for (const [setting, value] of list.settings)
      await client.query(`/*bench*/ select set_config($1, $2, false)`, [setting, value]);
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
