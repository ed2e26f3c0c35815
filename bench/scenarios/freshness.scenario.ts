/**
 * Freshness: how long a change at the provider takes to be visible in the list —
 * from the moment the stand-in stores a new message (and its watch publishes the notification)
 * until the service's own intake, job and sync have committed its row (mail_messages.created_at,
 * the database clock on the same machine). A steady rate of changes over many accounts, then
 * a burst, against the stand-in's per-request latency.
 */
import type pg from 'pg';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';

export interface FreshnessPhase {
  name: 'steady' | 'burst';
  changes: number;
  /** Changes whose row was stored within the time limit. */
  visible: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  /** Provider calls of the phase until its last change was stored: history.list (one per sync) and messages.get. */
  historyLists?: number;
  messageGets?: number;
  /** CPU used during the phase (ms) by each part on this machine, when the run measures it. */
  cpuMs?: Record<string, number>;
  /** Wall time from the phase's first change to its last change stored (ms). */
  wallMs?: number;
}

export interface FreshnessResult {
  accounts: number;
  latencyMs: number;
  steadyPerSecond: number;
  phases: FreshnessPhase[];
}

const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! : null;

/** Waits until every message is stored (or the time limit), then reads each one's delay. */
async function delays(pool: pg.Pool, changedAt: Map<string, number>, timeoutMs: number): Promise<number[]> {
  const ids = [...changedAt.keys()];
  const deadline = Date.now() + timeoutMs;
  let rows: { id: string; at: Date }[] = [];
  while (Date.now() < deadline) {
    rows = (
      await pool.query<{ id: string; at: Date }>(
        '/*bench*/ select provider_message_id as id, created_at as at from mail_messages where provider_message_id = any($1)',
        [ids],
      )
    ).rows;
    if (rows.length >= ids.length) break;
    // The delays come from created_at, not from when this poll saw the row: poll gently.
    await new Promise((r) => setTimeout(r, 500));
  }
  return rows.map((r) => new Date(r.at).getTime() - changedAt.get(r.id)!).sort((a, b) => a - b);
}

/** What a phase cost: CPU by part (cumulative readings before and after), provider calls, wall time. */
export type CpuReading = () => Record<string, number>;

function phase(
  name: FreshnessPhase['name'],
  changes: number,
  d: number[],
  cost: {
    gmail: GmailStandIn;
    cpu?: CpuReading;
    start: { at: number; cpu?: Record<string, number>; calls: Record<string, number> };
  },
): FreshnessPhase {
  const cpu = cost.cpu?.();
  const calls = (k: string) => (cost.gmail.calls[k] ?? 0) - (cost.start.calls[k] ?? 0);
  return {
    name,
    changes,
    visible: d.length,
    p50Ms: quantile(d, 0.5),
    p99Ms: quantile(d, 0.99),
    maxMs: d.at(-1) ?? null,
    historyLists: calls('history.list'),
    messageGets: calls('messages.get'),
    ...(cpu && cost.start.cpu
      ? {
          cpuMs: Object.fromEntries(
            Object.entries(cpu).map(([k, v]) => [k, Math.round(v - (cost.start.cpu![k] ?? 0))]),
          ),
        }
      : {}),
    wallMs: Date.now() - cost.start.at,
  };
}

export async function freshness(opts: {
  emails: string[];
  gmail: GmailStandIn;
  pool: pg.Pool;
  latencyMs: number;
  steadyPerSecond: number;
  steadySeconds: number;
  burst: number;
  timeoutMs: number;
  /** Cumulative CPU (ms) of the server, the database and the bench process (stand-ins), to cost each phase. */
  cpu?: CpuReading;
}): Promise<FreshnessResult> {
  const { gmail, emails } = opts;
  const mark = () => ({ at: Date.now(), cpu: opts.cpu?.(), calls: { ...gmail.calls } });
  const cost = (start: ReturnType<typeof mark>) => ({ gmail, cpu: opts.cpu, start });
  gmail.setLatency(opts.latencyMs);
  const pick = (i: number) => emails[(i * 7919) % emails.length]!;
  // Steady: changes spread evenly over time, each on some account.
  const steady = new Map<string, number>();
  const steadyStart = mark();
  const total = opts.steadyPerSecond * opts.steadySeconds;
  const t0 = Date.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / opts.steadyPerSecond;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    steady.set(gmail.addMessage(pick(i), { subject: `fresh ${i}` }).id, Date.now());
  }
  const steadyDelays = await delays(opts.pool, steady, opts.timeoutMs);
  const steadyPhase = phase('steady', total, steadyDelays, cost(steadyStart));
  // Burst: every change at once.
  const burst = new Map<string, number>();
  const burstStart = mark();
  for (let i = 0; i < opts.burst; i++)
    burst.set(gmail.addMessage(pick(total + i), { subject: `burst ${i}` }).id, Date.now());
  const burstDelays = await delays(opts.pool, burst, opts.timeoutMs);
  const burstPhase = phase('burst', opts.burst, burstDelays, cost(burstStart));
  gmail.setLatency(0);
  return {
    accounts: emails.length,
    latencyMs: opts.latencyMs,
    steadyPerSecond: opts.steadyPerSecond,
    phases: [steadyPhase, burstPhase],
  };
}
