/**
 * Bench item 2: one sync call against the slow Gmail stand-in (wall time, provider requests and
 * round trips, statements), and resetting an account to a new listing or a history checkpoint.
 */
import type pg from 'pg';
import type { GmailStandIn, RecordedRequest } from '../../stand-ins/gmail.stand-in.ts';
import { freshIp, statementDelta, statementSnapshot, type BenchDatabase, type SignedIn } from '../infra.ts';

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
    headers: {
      Cookie: opts.account.cookie,
      'X-CSRF-Token': opts.account.csrfToken,
      Origin: opts.webOrigin,
      'X-Forwarded-For': freshIp(),
    },
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
