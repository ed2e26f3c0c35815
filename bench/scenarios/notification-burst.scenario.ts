/**
 * Bench item 3: a burst of Gmail notifications for many accounts, published into the Pub/Sub
 * stand-in, taken in by the server's intake as sync jobs and run by its sync workers.
 */
import type pg from 'pg';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import type { PubSubStandIn } from '../../stand-ins/pubsub.stand-in.ts';
import type { SignedIn } from '../infra.ts';

export interface NotificationBurstResult {
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

export async function notificationBurst(opts: {
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
}): Promise<NotificationBurstResult> {
  const { gmail, pubsub, pool } = opts;
  const ids = opts.accounts.map((a) => a.accountId);
  const stored = async () =>
    Number(
      (
        await pool.query<{ n: string }>(
          '/*bench*/ select count(*) as n from mail_messages where account_id = any($1::uuid[])',
          [ids],
        )
      ).rows[0]!.n,
    );
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
    if (drainedMs === null && published() >= opts.accounts.length * opts.perAccount && s.available + s.leased === 0)
      drainedMs = performance.now() - t0;
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
