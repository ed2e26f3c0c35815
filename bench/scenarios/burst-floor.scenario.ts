/**
 * Issue 29's burst row: 2,000 new messages over 1,000 signed-in accounts at once, with the
 * provider's latency, drained by the service (watch -> Pub/Sub -> intake -> job -> sync) and by
 * the sync floor (bench/floor/sync-floor.server.ts: the same provider calls and writes with
 * undici and pg, as many syncs in flight as the service's workers hold), in interleaved rounds.
 * Drain: from the first change until the last change's row is stored (its created_at, the
 * database's clock on this machine, for the service; the floor's answer for the floor).
 */
import type pg from 'pg';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';

export interface BurstRound {
  target: 'service' | 'floor';
  changes: number;
  stored: number;
  drainMs: number | null;
  /** Service only: each change's delay from the change to its row. */
  p50Ms?: number | null;
  p99Ms?: number | null;
  /** history.list calls (syncs) and messages.get calls of the round. */
  syncs: number;
  messageGets: number;
  /** Service only: sync jobs the job engine created in the round (the intake's, one per notification it did not coalesce). */
  jobs?: number | null;
  /** CPU (ms) of the round: the syncing process (server or floor) and the database's backends. */
  cpuMs: { process: number; database: number };
}

export interface BurstFloorResult {
  accounts: number;
  changes: number;
  latencyMs: number;
  floorConcurrency: number;
  rounds: BurstRound[];
  /** Median drain of the service over the floor's (goal ≤ 1.2). */
  ratio: number | null;
}

export interface BurstAccount {
  accountId: string;
  email: string;
}

const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! : null;

/** `changes` new messages spread over the accounts as the freshness phase spreads them; the accounts touched. */
function addChanges(gmail: GmailStandIn, accounts: BurstAccount[], changes: number, offset: number, label: string) {
  const changedAt = new Map<string, number>();
  const touched = new Map<string, BurstAccount>();
  for (let i = 0; i < changes; i++) {
    const a = accounts[((offset + i) * 7919) % accounts.length]!;
    changedAt.set(gmail.addMessage(a.email, { subject: `${label} ${offset + i}` }).id, Date.now());
    touched.set(a.accountId, a);
  }
  return { changedAt, touched: [...touched.values()] };
}

type CpuRead = () => { process: number; database: number };
const since = (read: CpuRead, start: { process: number; database: number }) => {
  const now = read();
  return { process: now.process - start.process, database: now.database - start.database };
};

/** `pool`: where the bench polls for the stored rows (a connection whose CPU `cpu` leaves out). */
export async function serviceBurst(opts: {
  accounts: BurstAccount[];
  gmail: GmailStandIn;
  pool: pg.Pool | pg.Client;
  changes: number;
  offset: number;
  timeoutMs: number;
  cpu: CpuRead;
  setForwarding(on: boolean): unknown;
}): Promise<BurstRound> {
  const { gmail } = opts;
  const calls = { ...gmail.calls };
  const cpu0 = opts.cpu();
  opts.setForwarding(true);
  const t0 = Date.now();
  const { changedAt } = addChanges(gmail, opts.accounts, opts.changes, opts.offset, 'burst');
  const ids = [...changedAt.keys()];
  const deadline = t0 + opts.timeoutMs;
  let rows: { id: string; at: Date }[] = [];
  while (Date.now() < deadline) {
    rows = (
      await opts.pool.query<{ id: string; at: Date }>(
        '/*bench*/ select provider_message_id as id, created_at as at from mail_messages where provider_message_id = any($1)',
        [ids],
      )
    ).rows;
    if (rows.length >= ids.length) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const cpuMs = since(opts.cpu, cpu0);
  opts.setForwarding(false);
  const jobs = await opts.pool
    .query<{ n: string }>(
      `/*bench*/ select count(*) as n from pgboss.job where name = 'mail-sync' and created_on >= to_timestamp($1 / 1000.0)`,
      [t0],
    )
    .then(
      (r) => Number(r.rows[0]!.n),
      () => null,
    );
  const delays = rows.map((r) => new Date(r.at).getTime() - changedAt.get(r.id)!).sort((a, b) => a - b);
  const last = Math.max(...rows.map((r) => new Date(r.at).getTime()));
  return {
    target: 'service',
    changes: opts.changes,
    stored: rows.length,
    drainMs: rows.length === ids.length ? last - t0 : null,
    p50Ms: quantile(delays, 0.5),
    p99Ms: quantile(delays, 0.99),
    syncs: (gmail.calls['history.list'] ?? 0) - (calls['history.list'] ?? 0),
    messageGets: (gmail.calls['messages.get'] ?? 0) - (calls['messages.get'] ?? 0),
    jobs,
    cpuMs,
  };
}

export async function floorBurst(opts: {
  accounts: BurstAccount[];
  gmail: GmailStandIn;
  floorUrl: string;
  token(email: string): string;
  changes: number;
  offset: number;
  concurrency: number;
  cpu: CpuRead;
}): Promise<BurstRound> {
  const { gmail } = opts;
  const calls = { ...gmail.calls };
  const cpu0 = opts.cpu();
  const t0 = Date.now();
  const { touched } = addChanges(gmail, opts.accounts, opts.changes, opts.offset, 'floor burst');
  const res = await fetch(`${opts.floorUrl}/sync`, {
    method: 'POST',
    body: JSON.stringify({
      concurrency: opts.concurrency,
      accounts: touched.map((a) => ({ accountId: a.accountId, token: opts.token(a.email) })),
    }),
  });
  const drainMs = Date.now() - t0;
  const cpuMs = since(opts.cpu, cpu0);
  if (res.status !== 200) throw new Error(`the floor's burst answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { stored: number };
  return {
    target: 'floor',
    changes: opts.changes,
    stored: body.stored,
    drainMs: body.stored === opts.changes ? drainMs : null,
    syncs: (gmail.calls['history.list'] ?? 0) - (calls['history.list'] ?? 0),
    messageGets: (gmail.calls['messages.get'] ?? 0) - (calls['messages.get'] ?? 0),
    cpuMs,
  };
}
