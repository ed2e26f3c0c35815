/**
 * Issue 29's row: the CPU of one incremental sync of one new message, next to a floor that
 * makes the same provider calls (history.list, messages.get metadata) and the same writes with
 * Node's undici and plain pg (bench/floor/sync-floor.server.ts). Three targets, in interleaved
 * rounds, each syncing one new message at a time:
 *
 * - route: `POST /api/mail/sync` (session, CSRF, rate limit, lease, credentials, sync);
 * - job: the notification path (the stand-in's watch publishes, the intake makes a job, a
 *   worker syncs), the server's idle CPU over the same wall time subtracted (its intake's pull
 *   and the job engine's polling run whether or not mail arrives);
 * - floor: `POST /sync` on the floor.
 *
 * CPU from /proc (10 ms ticks; hence many syncs per round), of the process and of the database's
 * backends; statements from pg_stat_statements.
 */
import pg from 'pg';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { cpuMs, freshIp, postgresCpu, type BenchDatabase, type SignedIn } from '../infra.ts';

export type SyncCpuTarget = 'route' | 'job' | 'floor';

export interface SyncCpuRound {
  target: SyncCpuTarget;
  syncs: number;
  wallMs: number;
  /** CPU of the process that synced (server or floor), per sync; for `job` the idle rate over the same time is taken off. */
  processMsPerSync: number;
  databaseMsPerSync: number;
  statementsPerSync: number | null;
  /** WAL the cluster wrote over the round, per sync (the job engine's own writes included in the job row). */
  walBytesPerSync: number;
  /** The statements of the round with the most execution time (pg_stat_statements), per sync. */
  topStatements: { query: string; calls: number; ms: number }[];
  /** Floor only: bytes of the provider's answers per sync (the service asks for the same fields). */
  providerBytesPerSync?: number;
  /** For `job`: the server's CPU over the same wall time with nothing to do, per sync (what was taken off). */
  idleMsPerSync?: number;
  idleDatabaseMsPerSync?: number;
}

export interface SyncCpuResult {
  syncsPerRound: number;
  rounds: SyncCpuRound[];
  /** Median per target, and each target's ratio to the floor's process CPU. */
  median: Record<SyncCpuTarget, { processMs: number; databaseMs: number; statements: number | null; walBytes: number }>;
  ratio: { route: number; job: number };
  /** CPU profile of a second server doing only route syncs (where the CPU goes), per sync. */
  profile?: {
    syncs: number;
    busyMsPerSync: number;
    windowed: boolean;
    byPart: { part: string; msPerSync: number }[];
    selfByPart: { part: string; msPerSync: number }[];
    topSelf: { fn: string; msPerSync: number }[];
  } | null;
}

interface Deps {
  db: BenchDatabase;
  gmail: GmailStandIn;
}

/**
 * A connection of the bench's own whose backend's CPU the readers leave out: the bench polls the
 * database for the rows it waits for, and that polling is not the service's cost.
 */
export async function watcherConnection(
  db: BenchDatabase,
): Promise<{ client: pg.Client; pid: number; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const pid = (await client.query<{ pid: number }>('/*bench*/ select pg_backend_pid() as pid')).rows[0]!.pid;
  return { client, pid, close: () => client.end() };
}

/** CPU (ms) of `pid` and of the database's backends (but `exclude`'s), read as growth since the reader was made. */
export function cpuReader(pid: number, db: BenchDatabase, exclude: number[] = []) {
  const seen = new Map<number, number>(postgresCpu(db.name, db.postmasterPid));
  let database = 0;
  return () => {
    for (const [bpid, ms] of postgresCpu(db.name, db.postmasterPid)) {
      if (exclude.includes(bpid)) continue;
      database += ms - Math.min(ms, seen.get(bpid) ?? 0);
      seen.set(bpid, ms);
    }
    return { process: cpuMs(pid) ?? 0, database };
  };
}

/** Calls and execution time per normalised statement so far (pg_stat_statements), or null without it. */
async function statementTimes(db: BenchDatabase): Promise<Map<string, { calls: number; ms: number }> | null> {
  if (!db.statements) return null;
  const { rows } = await db.pool.query<{ query: string; calls: string; ms: number }>(
    `/*bench*/ select query, calls, total_exec_time as ms from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())`,
  );
  const out = new Map<string, { calls: number; ms: number }>();
  for (const r of rows) {
    const had = out.get(r.query) ?? { calls: 0, ms: 0 };
    out.set(r.query, { calls: had.calls + Number(r.calls), ms: had.ms + r.ms });
  }
  return out;
}

async function measure(
  target: SyncCpuTarget,
  deps: Deps,
  pid: number,
  syncs: number,
  one: (i: number) => Promise<void>,
  exclude: number[] = [],
): Promise<SyncCpuRound> {
  const read = cpuReader(pid, deps.db, exclude);
  const before = await statementTimes(deps.db);
  const lsn = async () =>
    (await deps.db.pool.query<{ lsn: string }>('/*bench*/ select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;
  const lsn0 = await lsn();
  const c0 = read();
  const t0 = performance.now();
  for (let i = 0; i < syncs; i++) await one(i);
  const wallMs = performance.now() - t0;
  const c1 = read();
  const wal = Number(
    (
      await deps.db.pool.query<{ b: string }>(
        '/*bench*/ select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) as b',
        [lsn0],
      )
    ).rows[0]!.b,
  );
  const after = await statementTimes(deps.db);
  const delta =
    before && after
      ? [...after]
          .map(([query, a]) => ({
            query,
            calls: a.calls - (before.get(query)?.calls ?? 0),
            ms: a.ms - (before.get(query)?.ms ?? 0),
          }))
          .filter((s) => s.calls > 0 && !/\/\*bench\*\/|pg_stat_statements/.test(s.query))
      : null;
  const statements = delta ? delta.reduce((a, s) => a + s.calls, 0) : null;
  const topStatements = (delta ?? [])
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10)
    .map((s) => ({
      query: s.query.replace(/\s+/g, ' ').slice(0, 120),
      calls: Math.round((s.calls / syncs) * 100) / 100,
      ms: Math.round((s.ms / syncs) * 1000) / 1000,
    }));
  return {
    target,
    syncs,
    wallMs,
    processMsPerSync: (c1.process - c0.process) / syncs,
    databaseMsPerSync: (c1.database - c0.database) / syncs,
    statementsPerSync: statements === null ? null : statements / syncs,
    walBytesPerSync: Math.round(wal / syncs),
    topStatements,
  };
}

/** Syncs through `POST /api/mail/sync`, one new message each. */
export function routeSyncs(
  deps: Deps,
  serverUrl: string,
  webOrigin: string,
  pid: number,
  account: SignedIn,
  syncs: number,
) {
  return measure('route', deps, pid, syncs, async (i) => {
    deps.gmail.addMessage(account.email, { subject: `cpu route ${i}` });
    const res = await fetch(`${serverUrl}/api/mail/sync`, {
      method: 'POST',
      headers: {
        Cookie: account.cookie,
        'X-CSRF-Token': account.csrfToken,
        Origin: webOrigin,
        'X-Forwarded-For': freshIp(),
      },
    });
    const body = (await res.json()) as { messagesSynced?: number };
    if (res.status !== 200 || body.messagesSynced !== 1)
      throw new Error(`route sync answered ${res.status}, ${body.messagesSynced} synced`);
  });
}

/** Syncs through the notification path (forwarding must be on): a new message, then wait for its row. */
export async function jobSyncs(deps: Deps, pid: number, account: SignedIn, syncs: number): Promise<SyncCpuRound> {
  const watcher = await watcherConnection(deps.db);
  // Rows are polled on the watcher's connection, left out of the database's CPU.
  const round = await measure(
    'job',
    deps,
    pid,
    syncs,
    async (i) => {
      const { id } = deps.gmail.addMessage(account.email, { subject: `cpu job ${i}` });
      const deadline = Date.now() + 30_000;
      for (;;) {
        const { rowCount } = await watcher.client.query(
          '/*bench*/ select 1 from mail_messages where account_id = $1 and provider_message_id = $2',
          [account.accountId, id],
        );
        if (rowCount) return;
        if (Date.now() > deadline) throw new Error('a notified message was not stored within 30 s');
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    [watcher.pid],
  ).finally(() => watcher.close());
  // The server's and the database's background work (job polling, the intake's pulls) over the same wall time, nothing notified.
  const idle = cpuReader(pid, deps.db);
  const before = idle();
  await new Promise((r) => setTimeout(r, round.wallMs));
  const after = idle();
  const idleMsPerSync = (after.process - before.process) / syncs;
  const idleDatabaseMsPerSync = (after.database - before.database) / syncs;
  return {
    ...round,
    idleMsPerSync,
    idleDatabaseMsPerSync,
    processMsPerSync: round.processMsPerSync - idleMsPerSync,
    databaseMsPerSync: round.databaseMsPerSync - idleDatabaseMsPerSync,
  };
}

/** Syncs through the floor, one account at a time. */
export async function floorSyncs(
  deps: Deps,
  floorUrl: string,
  pid: number,
  account: { accountId: string; email: string; token: string },
  syncs: number,
): Promise<SyncCpuRound> {
  let bytes = 0;
  const round = await measure('floor', deps, pid, syncs, async (i) => {
    deps.gmail.addMessage(account.email, { subject: `cpu floor ${i}` });
    const res = await fetch(`${floorUrl}/sync`, {
      method: 'POST',
      body: JSON.stringify({ accounts: [{ accountId: account.accountId, token: account.token }] }),
    });
    const body = (await res.json()) as { stored?: number; providerBytes?: number };
    if (res.status !== 200 || body.stored !== 1)
      throw new Error(`floor sync answered ${res.status}, ${body.stored} stored`);
    bytes += body.providerBytes ?? 0;
  });
  return { ...round, providerBytesPerSync: Math.round(bytes / syncs) };
}
