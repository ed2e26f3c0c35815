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
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { cpuMs, freshIp, postgresCpu, statementDelta, statementSnapshot, type BenchDatabase, type SignedIn } from '../infra.ts';

export type SyncCpuTarget = 'route' | 'job' | 'floor';

export interface SyncCpuRound {
  target: SyncCpuTarget;
  syncs: number;
  wallMs: number;
  /** CPU of the process that synced (server or floor), per sync; for `job` the idle rate over the same time is taken off. */
  processMsPerSync: number;
  databaseMsPerSync: number;
  statementsPerSync: number | null;
  /** For `job`: the server's CPU over the same wall time with nothing to do, per sync (what was taken off). */
  idleMsPerSync?: number;
}

export interface SyncCpuResult {
  syncsPerRound: number;
  rounds: SyncCpuRound[];
  /** Median per target, and each target's ratio to the floor's process CPU. */
  median: Record<SyncCpuTarget, { processMs: number; databaseMs: number; statements: number | null }>;
  ratio: { route: number; job: number };
  /** CPU profile of a second server doing only route syncs (where the CPU goes), per sync. */
  profile?: { syncs: number; busyMsPerSync: number; windowed: boolean; byPart: { part: string; msPerSync: number }[]; selfByPart: { part: string; msPerSync: number }[]; topSelf: { fn: string; msPerSync: number }[] } | null;
}

interface Deps {
  db: BenchDatabase;
  gmail: GmailStandIn;
}

/** CPU (ms) of `pid` and of the database's backends, read as growth since the reader was made. */
export function cpuReader(pid: number, db: BenchDatabase) {
  const seen = new Map<number, number>(postgresCpu(db.name, db.postmasterPid));
  let database = 0;
  return () => {
    for (const [bpid, ms] of postgresCpu(db.name, db.postmasterPid)) {
      database += ms - Math.min(ms, seen.get(bpid) ?? 0);
      seen.set(bpid, ms);
    }
    return { process: cpuMs(pid) ?? 0, database };
  };
}

async function measure(target: SyncCpuTarget, deps: Deps, pid: number, syncs: number, one: (i: number) => Promise<void>): Promise<SyncCpuRound> {
  const read = cpuReader(pid, deps.db);
  const before = await statementSnapshot(deps.db);
  const c0 = read();
  const t0 = performance.now();
  for (let i = 0; i < syncs; i++) await one(i);
  const wallMs = performance.now() - t0;
  const c1 = read();
  const delta = statementDelta(before, await statementSnapshot(deps.db));
  const statements = delta ? delta.filter((s) => !/\/\*bench\*\/|pg_stat_statements/.test(s.query)).reduce((a, s) => a + s.calls, 0) : null;
  return { target, syncs, wallMs, processMsPerSync: (c1.process - c0.process) / syncs, databaseMsPerSync: (c1.database - c0.database) / syncs, statementsPerSync: statements === null ? null : statements / syncs };
}

/** Syncs through `POST /api/mail/sync`, one new message each. */
export function routeSyncs(deps: Deps, serverUrl: string, webOrigin: string, pid: number, account: SignedIn, syncs: number) {
  return measure('route', deps, pid, syncs, async (i) => {
    deps.gmail.addMessage(account.email, { subject: `cpu route ${i}` });
    const res = await fetch(`${serverUrl}/api/mail/sync`, {
      method: 'POST',
      headers: { Cookie: account.cookie, 'X-CSRF-Token': account.csrfToken, Origin: webOrigin, 'X-Forwarded-For': freshIp() },
    });
    const body = (await res.json()) as { messagesSynced?: number };
    if (res.status !== 200 || body.messagesSynced !== 1) throw new Error(`route sync answered ${res.status}, ${body.messagesSynced} synced`);
  });
}

/** Syncs through the notification path (forwarding must be on): a new message, then wait for its row. */
export async function jobSyncs(deps: Deps, pid: number, account: SignedIn, syncs: number): Promise<SyncCpuRound> {
  const round = await measure('job', deps, pid, syncs, async (i) => {
    const { id } = deps.gmail.addMessage(account.email, { subject: `cpu job ${i}` });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { rowCount } = await deps.db.pool.query('/*bench*/ select 1 from mail_messages where account_id = $1 and provider_message_id = $2', [account.accountId, id]);
      if (rowCount) return;
      if (Date.now() > deadline) throw new Error('a notified message was not stored within 30 s');
      await new Promise((r) => setTimeout(r, 5));
    }
  });
  // The server's background work over the same wall time, nothing notified.
  const before = cpuMs(pid) ?? 0;
  await new Promise((r) => setTimeout(r, round.wallMs));
  const idleMsPerSync = ((cpuMs(pid) ?? 0) - before) / syncs;
  return { ...round, idleMsPerSync, processMsPerSync: round.processMsPerSync - idleMsPerSync };
}

/** Syncs through the floor, one account at a time. */
export function floorSyncs(deps: Deps, floorUrl: string, pid: number, account: { accountId: string; email: string; token: string }, syncs: number) {
  return measure('floor', deps, pid, syncs, async (i) => {
    deps.gmail.addMessage(account.email, { subject: `cpu floor ${i}` });
    const res = await fetch(`${floorUrl}/sync`, { method: 'POST', body: JSON.stringify({ accounts: [{ accountId: account.accountId, token: account.token }] }) });
    const body = (await res.json()) as { stored?: number };
    if (res.status !== 200 || body.stored !== 1) throw new Error(`floor sync answered ${res.status}, ${body.stored} stored`);
  });
}
