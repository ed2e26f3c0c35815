/**
 * Backfill: a new user's whole inbox, from sign-in to fully listed, against a Gmail stand-in
 * that enforces the provider's per-user quota at Google's 2026 costs (messages.get 20 units,
 * threads.get 40, messages.list 5, history.list 2, ...) in a moving window per mailbox, the
 * window and limit the server paces every account within. The figures: the ratio to the
 * quota-limited optimum (the units the listing needs, spent at exactly the limit per window),
 * no call refused (a refusal would reach the user as MAIL_RATE_LIMITED), the most units the
 * stand-in counted in any one window, the units per backfilled message; beside it, the user
 * opening threads while it runs (each open's latency: the user's lane must find room beside the
 * bulk one) and mail that arrives and is notified while it runs (its delay until stored: the
 * listing's second cursor reads the history between its pages). Then the resync: the history
 * expires, 1 % of the inbox changes, and the quota units the resync spends are set next to what
 * fetching every message again would cost.
 */
import type pg from 'pg';
import type { IdentityStandIn } from '../../stand-ins/identity.stand-in.ts';
import { QUOTA_COSTS_2026, type GmailStandIn, type QuotaProfile } from '../../stand-ins/gmail.stand-in.ts';
import { signIn, type SignedIn } from '../infra.ts';
import { resync, type ResyncResult } from './resync.scenario.ts';
import { openThreads, quantile, sleep, timings, type Timings } from './thread-opens.ts';

export interface BackfillQuota {
  unitsPerWindow: number;
  windowMs: number;
  profile: QuotaProfile;
}

export interface BackfillResult {
  messages: number;
  /** The quota the stand-in enforced and the server paced (units per moving window, 2026 costs). */
  quota: BackfillQuota;
  /** From the start of the sign-in until every message was stored. */
  ms: number;
  stored: number;
  /** The inbox's threads at the provider (the seed's shape: most threads one message, some 2-4). */
  threads: number;
  /** Inbox threads of three or more messages (where one threads.get, 40 units, costs less than their messages.get at 20 each). */
  threadsOfThreeOrMore: number;
  /** The units a listing of the inbox needs (list pages, one messages.get per message, the watch, the profile and the inbox count, the history reads it made). */
  optimumUnits: number;
  /** optimumUnits spent at exactly the limit per window. */
  optimumMs: number;
  /** optimumMs / ms. */
  ratio: number;
  /**
   * The units the stand-in was sent from the end of the first window until the backfill was done
   * (every lane: the user's opens and the notified syncs too), as a share of the limit over that
   * time: how full the windows were once the first one (spent at once) was gone.
   */
  sustainedShare: number | null;
  /** The same from the sign-in on (the first window included). */
  windowShare: number;
  refused: number;
  providerRequests: number;
  /** The most units the stand-in charged the mailbox within any one window (at most the limit). */
  quotaPeak: number;
  /** The units it charged the mailbox from the sign-in until the backfill was done (refused calls are not charged). */
  quotaSpent: number;
  /** The stand-in's units by endpoint over the backfill (every mailbox; only this one was active). */
  unitsByEndpoint: Record<string, number>;
  /**
   * (quotaSpent - the fixed costs (watch, profile, inbox count, list pages) - the user's thread
   * opens (threads.get format=full)) / the stored messages (the inbox and the mail that
   * arrived): next to the 20 of one messages.get per message.
   */
  unitsPerMessage: number;
  /** The fixed costs (watch, profile, inbox count, list pages) and the user's opens (threads.get format=full) taken off quotaSpent for it. */
  fixedUnits: number;
  opensUnits: number;
  /** The same were every thread of three or more messages read once (threads.get, 40) and every other message by messages.get (20): the inbox's shape at its cheapest. */
  threadShapeUnitsPerMessage: number;
  /** The backfill's thread reads (threads.get format=metadata) and message reads (messages.get). */
  threadReads: number;
  messageReads: number;
  /** The user's thread opens while the backfill ran (a list of 20, then a thread not opened yet). */
  opens?: Timings & { lists: Timings };
  /** Mail that arrived while the backfill ran: how many, and ms until each was stored. */
  arrivals?: { count: number; stored: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** The resync after the history expired and `changed` messages changed upstream. */
  resync?: ResyncResult;
}

export async function backfill(opts: {
  serverUrl: string;
  webOrigin: string;
  identity: IdentityStandIn;
  gmail: GmailStandIn;
  pool: pg.Pool;
  messages: number;
  /** The stand-in's quota: the window and limit the server paces the account within. */
  quota: BackfillQuota;
  arrivalEveryMs?: number;
  /** The user lists and opens a thread this often while the backfill runs. */
  openEveryMs?: number;
  resyncChangeShare?: number;
  /** Forwards the stand-in's notifications to the service's subscription while on. */
  setForwarding?: (on: boolean) => unknown;
}): Promise<BackfillResult> {
  const { gmail, pool } = opts;
  const email = 'backfill@bench.example';
  const costs = QUOTA_COSTS_2026;
  gmail.setLatency(0);
  // The seed's own thread shape (it has no option for it): most threads one message, a third of the people's 2-4.
  gmail.seed(email, opts.messages, { sentReplies: false });
  const perThread = new Map<string, number>();
  for (const m of gmail.inbox(email)) perThread.set(m.threadId, (perThread.get(m.threadId) ?? 0) + 1);
  const threads = perThread.size;
  const big = [...perThread.values()].filter((k) => k * costs['messages.get'] > costs['threads.get']);
  const shapeUnits =
    big.length * costs['threads.get'] + (opts.messages - big.reduce((a, k) => a + k, 0)) * costs['messages.get'];
  gmail.resetCounters();
  gmail.setQuota(opts.quota);
  const arrivals = new Map<string, { at: number; storedAt?: number }>();
  let backfilling = true;
  let user: ReturnType<typeof openThreads> | undefined;
  const t0 = performance.now();
  const wall0 = Date.now();
  // Its notifications reach the service as the provider's would.
  opts.setForwarding?.(Boolean(opts.arrivalEveryMs));
  try {
    // Mail keeps arriving while the backfill runs; each one's delay until it is stored is measured.
    const arriving = (async () => {
      if (!opts.arrivalEveryMs) return;
      for (let i = 0; backfilling; i++) {
        await sleep(opts.arrivalEveryMs);
        if (!backfilling) break;
        const m = gmail.addMessage(email, { subject: `Arrived during the backfill ${i}` });
        arrivals.set(m.id, { at: performance.now() });
      }
    })();
    const watching = (async () => {
      while (backfilling || [...arrivals.values()].some((a) => a.storedAt === undefined)) {
        const waiting = [...arrivals].filter(([, a]) => a.storedAt === undefined).map(([id]) => id);
        if (waiting.length) {
          const { rows } = await pool.query<{ pmid: string }>(
            '/*bench*/ select provider_message_id as pmid from mail_messages where provider_message_id = any($1::text[])',
            [waiting],
          );
          const now = performance.now();
          for (const r of rows) arrivals.get(r.pmid)!.storedAt = now;
        }
        if (!backfilling && performance.now() - t0 > 30 * 60_000) break;
        await sleep(100);
      }
    })();
    // signIn returns once the account's background sync is done (no job, no lease); the user opens threads meanwhile.
    const account = await signIn(
      opts.serverUrl,
      opts.webOrigin,
      opts.identity,
      { sub: 'bench-backfill', email },
      pool,
      30 * 60_000,
      (session) => {
        if (opts.openEveryMs) user = openThreads(session, opts.openEveryMs, () => backfilling);
      },
    );
    const ms = performance.now() - t0;
    const wallEnd = Date.now();
    backfilling = false;
    const userRequests = await user;
    await arriving;
    await Promise.race([watching, sleep(30_000)]);
    opts.setForwarding?.(false);
    const stored = Number(
      (
        await pool.query<{ n: string }>('/*bench*/ select count(*) as n from mail_messages where account_id = $1', [
          account.accountId,
        ])
      ).rows[0]!.n,
    );
    // What the stand-in charged, read before the resync resets its counters.
    const quotaSpent = gmail.quotaSpent(email);
    const quotaPeak = gmail.quotaPeak(email);
    const unitsByEndpoint = gmail.quotaUnitsByEndpoint();
    const calls = { ...gmail.calls };
    const refused = calls['quota-refused'] ?? 0;
    const providerRequests = gmail.requests.length;
    // A listing by id at 2026 costs: one messages.list per 500 ids, one messages.get per message, the watch, the profile and the inbox count, and the history reads it made.
    const optimumUnits =
      Math.ceil(opts.messages / 500) * costs['messages.list'] +
      opts.messages * costs['messages.get'] +
      costs.watch +
      costs.profile +
      costs['labels.get'] +
      (calls['history.list'] ?? 0) * costs['history.list'];
    const optimumMs = (optimumUnits / opts.quota.unitsPerWindow) * opts.quota.windowMs;
    // The units sent between two times, as a share of the limit over that time.
    const share = (from: number) =>
      gmail.requests
        .filter((r) => r.at > from && r.at <= wallEnd)
        .reduce((a, r) => a + (costs[r.endpoint as keyof typeof costs] ?? 0), 0) /
      ((opts.quota.unitsPerWindow * (wallEnd - from)) / opts.quota.windowMs);
    const after = wall0 + opts.quota.windowMs;
    const sustainedShare = wallEnd > after ? share(after) : null;
    const fixed = ['watch', 'profile', 'labels.get', 'messages.list'].reduce(
      (a, k) => a + (unitsByEndpoint[k] ?? 0),
      0,
    );
    const opensUnits = (calls['threads.get:full'] ?? 0) * costs['threads.get'];
    const delays = [...arrivals.values()].filter((a) => a.storedAt !== undefined).map((a) => a.storedAt! - a.at);
    const result: BackfillResult = {
      messages: opts.messages,
      quota: { ...opts.quota },
      ms,
      stored,
      threads,
      optimumUnits,
      optimumMs,
      ratio: optimumMs / ms,
      sustainedShare,
      windowShare: share(wall0 - 1),
      refused,
      providerRequests,
      quotaPeak,
      quotaSpent,
      unitsByEndpoint,
      unitsPerMessage: (quotaSpent - fixed - opensUnits) / Math.max(1, stored),
      fixedUnits: fixed,
      opensUnits,
      threadsOfThreeOrMore: big.length,
      threadShapeUnitsPerMessage: shapeUnits / opts.messages,
      threadReads: calls['threads.get:metadata'] ?? 0,
      messageReads: calls['messages.get'] ?? 0,
      ...(userRequests ? { opens: { ...timings(userRequests.opens), lists: timings(userRequests.lists) } } : {}),
      ...(opts.arrivalEveryMs
        ? {
            arrivals: {
              count: arrivals.size,
              stored: delays.length,
              p50Ms: Math.round(quantile(delays, 0.5)),
              p99Ms: Math.round(quantile(delays, 0.99)),
              maxMs: Math.round(Math.max(0, ...delays)),
            },
          }
        : {}),
    };
    if (opts.resyncChangeShare && opts.setForwarding)
      result.resync = await resync(opts, email, account.accountId, opts.resyncChangeShare);
    return result;
  } finally {
    backfilling = false;
    opts.setForwarding?.(false);
    gmail.setQuota(null);
  }
}
