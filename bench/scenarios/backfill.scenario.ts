/**
 * Backfill: a new user's whole inbox, from sign-in to fully listed, against a Gmail stand-in
 * that enforces the provider's per-user quota (units per moving second: messages.list 5,
 * messages.get 5, history.list 2, ...). The figures: the ratio to the quota-limited optimum
 * (the units the listing needs, spent at exactly the quota), no call refused (a refusal would
 * reach the user as MAIL_RATE_LIMITED), and how long mail that arrives while the backfill
 * runs waits before it is stored (the listing's second cursor reads the history between its
 * pages). Then the resync: the history expires, 1 % of the inbox changes, and the quota units
 * the resync spends are set next to what fetching every message again would cost.
 */
import type pg from 'pg';
import type { IdentityStandIn } from '../../stand-ins/identity.stand-in.ts';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { signIn } from '../infra.ts';
import { resync, type ResyncResult } from './resync.scenario.ts';

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
  /** Mail that arrived while the backfill ran: how many, and ms until each was stored. */
  arrivals?: { count: number; stored: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** The resync after the history expired and `changed` messages changed upstream. */
  resync?: ResyncResult;
}

const quantile = (xs: number[], q: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]! : 0);

export async function backfill(opts: {
  serverUrl: string;
  webOrigin: string;
  identity: IdentityStandIn;
  gmail: GmailStandIn;
  pool: pg.Pool;
  messages: number;
  quotaUnitsPerSecond: number;
  arrivalEveryMs?: number;
  resyncChangeShare?: number;
  /** Forwards the stand-in's notifications to the service's subscription while on. */
  setForwarding?: (on: boolean) => unknown;
}): Promise<BackfillResult> {
  const { gmail, pool } = opts;
  const email = 'backfill@bench.example';
  gmail.setLatency(0);
  gmail.seed(email, opts.messages, { sentReplies: false });
  gmail.resetCounters();
  gmail.setQuota(opts.quotaUnitsPerSecond);
  const arrivals = new Map<string, { at: number; storedAt?: number }>();
  let backfilling = true;
  const t0 = performance.now();
  // Its notifications reach the service as the provider's would.
  opts.setForwarding?.(Boolean(opts.arrivalEveryMs));
  try {
    // Mail keeps arriving while the backfill runs; each one's delay until it is stored is measured.
    const arriving = (async () => {
      if (!opts.arrivalEveryMs) return;
      for (let i = 0; backfilling; i++) {
        await new Promise((r) => setTimeout(r, opts.arrivalEveryMs));
        if (!backfilling) break;
        const m = gmail.addMessage(email, { subject: `Arrived during the backfill ${i}` });
        arrivals.set(m.id, { at: performance.now() });
      }
    })();
    const watching = (async () => {
      while (backfilling || [...arrivals.values()].some((a) => a.storedAt === undefined)) {
        const waiting = [...arrivals].filter(([, a]) => a.storedAt === undefined).map(([id]) => id);
        if (waiting.length) {
          const { rows } = await pool.query<{ pmid: string }>('/*bench*/ select provider_message_id as pmid from mail_messages where provider_message_id = any($1::text[])', [waiting]);
          const now = performance.now();
          for (const r of rows) arrivals.get(r.pmid)!.storedAt = now;
        }
        if (!backfilling && performance.now() - t0 > 30 * 60_000) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    // signIn returns once the account's background sync is done (no job, no lease).
    const account = await signIn(opts.serverUrl, opts.webOrigin, opts.identity, { sub: 'bench-backfill', email }, pool, 30 * 60_000);
    const ms = performance.now() - t0;
    backfilling = false;
    await arriving;
    await Promise.race([watching, new Promise((r) => setTimeout(r, 30_000))]);
    opts.setForwarding?.(false);
    const stored = Number((await pool.query<{ n: string }>('/*bench*/ select count(*) as n from mail_messages where account_id = $1', [account.accountId])).rows[0]!.n);
    // A listing by id: one messages.list (5) per 500 ids, one messages.get (5) per message, the watch (100), the profile and the inbox count (1 each).
    const units = Math.ceil(opts.messages / 500) * 5 + opts.messages * 5 + 100 + 2;
    const optimumMs = (units / opts.quotaUnitsPerSecond) * 1000;
    const delays = [...arrivals.values()].filter((a) => a.storedAt !== undefined).map((a) => a.storedAt! - a.at);
    const result: BackfillResult = {
      messages: opts.messages,
      quotaUnitsPerSecond: opts.quotaUnitsPerSecond,
      ms,
      stored,
      optimumMs,
      ratio: optimumMs / ms,
      refused: gmail.calls['quota-refused'] ?? 0,
      providerRequests: gmail.requests.length,
      ...(opts.arrivalEveryMs
        ? { arrivals: { count: arrivals.size, stored: delays.length, p50Ms: Math.round(quantile(delays, 0.5)), p99Ms: Math.round(quantile(delays, 0.99)), maxMs: Math.round(Math.max(0, ...delays)) } }
        : {}),
    };
    if (opts.resyncChangeShare && opts.setForwarding) result.resync = await resync(opts, email, account.accountId, opts.resyncChangeShare);
    return result;
  } finally {
    backfilling = false;
    opts.setForwarding?.(false);
    gmail.setQuota(null);
  }
}
