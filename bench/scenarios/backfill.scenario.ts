/**
 * Backfill: a new user's whole inbox, from sign-in to fully listed, against a
 * Gmail stand-in that enforces the provider's per-user quota (units per moving second:
 * messages.list 5, messages.get 5, history.list 2, ...). The figure is the ratio to the
 * quota-limited optimum (the units the listing needs, spent at exactly the quota), and no
 * call may be refused (a refusal would reach the user as MAIL_RATE_LIMITED).
 */
import type pg from 'pg';
import type { IdentityStandIn } from '../../stand-ins/identity.stand-in.ts';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { signIn } from '../infra.ts';

export interface BackfillResult {
  messages: number;
  quotaUnitsPerSecond: number;
  /** From the start of the sign-in until every message was stored. */
  ms: number;
  stored: number;
  /** The units a listing of the inbox needs, spent at exactly the quota. */
  optimumMs: number;
  /** optimumMs / ms. */
  ratio: number;
  refused: number;
  providerRequests: number;
}

export async function backfill(opts: { serverUrl: string; webOrigin: string; identity: IdentityStandIn; gmail: GmailStandIn; pool: pg.Pool; messages: number; quotaUnitsPerSecond: number }): Promise<BackfillResult> {
  const { gmail } = opts;
  const email = 'backfill@bench.example';
  gmail.setLatency(0);
  gmail.seed(email, opts.messages, { sentReplies: false });
  gmail.resetCounters();
  gmail.setQuota(opts.quotaUnitsPerSecond);
  const t0 = performance.now();
  try {
    // signIn returns once the account's background sync is done (no job, no lease).
    const account = await signIn(opts.serverUrl, opts.webOrigin, opts.identity, { sub: 'bench-backfill', email }, opts.pool);
    const ms = performance.now() - t0;
    const stored = Number((await opts.pool.query<{ n: string }>('/*bench*/ select count(*) as n from mail_messages where account_id = $1', [account.accountId])).rows[0]!.n);
    // A listing: one messages.list (5) per 50 messages, one messages.get (5) per message, the watch (100), two profiles (1).
    const units = Math.ceil(opts.messages / 50) * 5 + opts.messages * 5 + 100 + 2;
    const optimumMs = (units / opts.quotaUnitsPerSecond) * 1000;
    return {
      messages: opts.messages,
      quotaUnitsPerSecond: opts.quotaUnitsPerSecond,
      ms,
      stored,
      optimumMs,
      ratio: optimumMs / ms,
      refused: gmail.calls['quota-refused'] ?? 0,
      providerRequests: gmail.requests.length,
    };
  } finally {
    gmail.setQuota(null);
  }
}
