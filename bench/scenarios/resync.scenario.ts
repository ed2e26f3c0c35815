/**
 * The resync after the history expired (issue 28): `share` of the inbox changes while nobody
 * hears (a quarter each archived, read or unread again, deleted, and new), the history
 * expires, and the next notification finds it gone. The service lists ids only, fetches what
 * the store does not know and relabels or deletes the rest from the ids; the figure is the
 * quota units it spends until the stored inbox is the provider's again, next to what fetching
 * every message would cost. Used after item 7's backfill, and at scale by `--only resync`
 * (bench/run/resync.phase.ts), which fills the store first with the quota lifted: the units
 * of the resync do not depend on how fast the inbox was listed before it.
 */
import type pg from 'pg';
import {
  QUOTA_COSTS_2026,
  type GmailStandIn,
  type QuotaCosts,
  type QuotaEndpoint,
  type QuotaProfile,
} from '../../stand-ins/gmail.stand-in.ts';
import { backgroundSyncDone } from '../infra.ts';

export interface ResyncResult {
  /** The provider's inbox before the changes. */
  inbox: number;
  changed: number;
  /** The quota units (2026 costs) the stand-in charged the mailbox from the changes until the resync ended. */
  units: number;
  /** messages.get of every message of the inbox (20 units each at 2026 costs) and the listing of their ids (5 a page of 500). */
  fetchAllUnits: number;
  share: number;
  messagesGets: number;
  listPages: number;
  /** The stand-in's calls by endpoint (refused ones included, and counted as `quota-refused` too). */
  calls?: Record<string, number>;
  /** From the changes until the stored inbox was the provider's again. */
  ms: number;
  /** The stored copy next to the provider's afterwards (every message and every inbox thread). */
  check?: StoreCheck;
}

export interface StoreCheck {
  /** Messages in the provider's inbox, and stored rows in the inbox. */
  providerInbox: number;
  storedInbox: number;
  /** Provider inbox messages not stored in the inbox, or stored with another read state. */
  inboxMismatched: number;
  /** Stored inbox rows the provider's inbox does not hold (archived or deleted there). */
  storedNotInInbox: number;
  /** Stored rows of messages the provider no longer has. */
  storedDeleted: number;
  /** Inbox threads: the provider's (a thread with a message in INBOX), the stored ones, and those that differ (missing, extra, or another unread state). */
  providerThreads: number;
  storedThreads: number;
  threadsMismatched: number;
  equal: boolean;
}

/** Gmail's quota units (the stand-in's cost table, 2026 by default) of the calls the stand-in counted (refused ones included). */
export function unitsOf(calls: Record<string, number>, costs: QuotaCosts = QUOTA_COSTS_2026): number {
  return (Object.entries(costs) as [QuotaEndpoint, number][]).reduce(
    (a, [endpoint, cost]) => a + cost * (calls[endpoint] ?? 0),
    0,
  );
}

/** Fetching every message of an inbox of `n` again: its ids listed (500 a page) and one messages.get each. */
export const fetchAllUnitsOf = (n: number, costs: QuotaCosts = QUOTA_COSTS_2026) =>
  costs['messages.get'] * n + costs['messages.list'] * Math.ceil(n / 500);

/** The account's stored messages and inbox threads, compared with every message of the provider's mailbox. */
export async function checkStore(
  gmail: GmailStandIn,
  pool: pg.Pool,
  email: string,
  accountId: string,
): Promise<StoreCheck> {
  const provider = new Map(gmail.messages(email).map((m) => [m.id, m]));
  const { rows } = await pool.query<{ id: string; inbox: boolean; unread: boolean }>(
    '/*bench*/ select provider_message_id as id, in_inbox as inbox, is_unread as unread from mail_messages where account_id = $1',
    [accountId],
  );
  const stored = new Map(rows.map((r) => [r.id, r]));
  let providerInbox = 0;
  let inboxMismatched = 0;
  const threads = new Map<string, boolean>();
  for (const m of provider.values()) {
    const unread = m.labelIds.includes('UNREAD');
    if (m.labelIds.includes('INBOX')) {
      providerInbox++;
      const s = stored.get(m.id);
      if (!s?.inbox || s.unread !== unread) inboxMismatched++;
      threads.set(m.threadId, threads.get(m.threadId) ?? false);
    }
  }
  for (const m of provider.values())
    if (threads.has(m.threadId) && m.labelIds.includes('UNREAD')) threads.set(m.threadId, true);
  const storedInbox = rows.filter((r) => r.inbox);
  const storedNotInInbox = storedInbox.filter((r) => !provider.get(r.id)?.labelIds.includes('INBOX')).length;
  const storedDeleted = rows.filter((r) => !provider.has(r.id)).length;
  const t = await pool.query<{ id: string; unread: boolean }>(
    '/*bench*/ select provider_thread_id as id, is_unread as unread from mail_threads where account_id = $1 and in_inbox',
    [accountId],
  );
  let threadsMismatched = t.rows.filter((r) => threads.get(r.id) !== r.unread).length;
  const storedThreadIds = new Set(t.rows.map((r) => r.id));
  threadsMismatched += [...threads.keys()].filter((id) => !storedThreadIds.has(id)).length;
  return {
    providerInbox,
    storedInbox: storedInbox.length,
    inboxMismatched,
    storedNotInInbox,
    storedDeleted,
    providerThreads: threads.size,
    storedThreads: t.rows.length,
    threadsMismatched,
    equal:
      inboxMismatched === 0 &&
      storedNotInInbox === 0 &&
      storedDeleted === 0 &&
      threadsMismatched === 0 &&
      providerInbox === storedInbox.length,
  };
}

/** The history expires and `share` of the inbox changes (notified): the resync's units, next to fetching every message. */
export async function resync(
  opts: { gmail: GmailStandIn; pool: pg.Pool; setForwarding?: (on: boolean) => unknown },
  email: string,
  accountId: string,
  share: number,
): Promise<ResyncResult> {
  const { gmail, pool } = opts;
  const inbox = gmail.inbox(email);
  const n = Math.max(1, Math.round(inbox.length * share));
  gmail.resetCounters();
  const t0 = performance.now();
  // While nobody hears (an outage): a quarter each archived, read or unread again, deleted, and new; then the history expires.
  const q = Math.max(1, Math.floor(n / 4));
  for (let i = 0; i < q; i++) {
    gmail.archive(email, inbox[i * 4 + 4]!.id);
    gmail.setRead(email, inbox[i * 4 + 5]!.id, inbox[i * 4 + 5]!.unread);
    gmail.deleteMessage(email, inbox[i * 4 + 6]!.id);
    gmail.addMessage(email, { subject: `New during the outage ${i}` });
  }
  gmail.expireHistory(email);
  opts.setForwarding!(true);
  try {
    // The next notification finds the history gone: the resync.
    const last = gmail.addMessage(email, { subject: 'The first notification after the outage' });
    // Done when the stored inbox is the provider's again, and the account's jobs have ended.
    // The counts are cheap to poll; the whole inbox is compared only once they agree.
    const after = gmail.inbox(email);
    const wantUnread = after.filter((m) => m.unread).length;
    const want = after
      .map((m) => `${m.id}:${m.unread}`)
      .sort()
      .join(',');
    for (
      const deadline = Date.now() + 30 * 60_000;
      Date.now() < deadline;
      await new Promise((r) => setTimeout(r, 200))
    ) {
      const c = (
        await pool.query<{ inbox: string; unread: string; last: boolean }>(
          `/*bench*/ select count(*) filter (where in_inbox) as inbox, count(*) filter (where in_inbox and is_unread) as unread,
                bool_or(provider_message_id = $2) as last from mail_messages where account_id = $1`,
          [accountId, last.id],
        )
      ).rows[0]!;
      if (Number(c.inbox) !== after.length || Number(c.unread) !== wantUnread || !c.last) continue;
      const { rows } = await pool.query<{ k: string }>(
        `/*bench*/ select provider_message_id || ':' || is_unread as k from mail_messages where account_id = $1 and in_inbox`,
        [accountId],
      );
      if (
        rows
          .map((r) => r.k)
          .sort()
          .join(',') === want
      )
        break;
    }
    await backgroundSyncDone(pool, accountId, 30 * 60_000);
  } finally {
    opts.setForwarding!(false);
  }
  const ms = Math.round(performance.now() - t0);
  // What the stand-in charged the mailbox (its quota is on in both callers); the calls' units when it charged nothing.
  const units = gmail.quotaSpent(email) || unitsOf(gmail.calls);
  const fetchAllUnits = fetchAllUnitsOf(inbox.length);
  return {
    inbox: inbox.length,
    changed: 4 * q + 1,
    units,
    fetchAllUnits,
    share: units / fetchAllUnits,
    messagesGets: gmail.calls['messages.get'] ?? 0,
    listPages: gmail.calls['messages.list'] ?? 0,
    calls: Object.fromEntries(Object.entries(gmail.calls).filter(([, v]) => v > 0)),
    ms,
    check: await checkStore(gmail, pool, email, accountId),
  };
}

/** `--only resync`: the store filled by the service's own backfill with the quota lifted, then the resync at the real quota. */
export interface ResyncScaleResult {
  messages: number;
  /** The backfill before it (server pacer off, the stand-in charging at 2026 costs without refusing): time, units, calls, and the stores compared. */
  fill: { ms: number; units: number; providerRequests: number; check: StoreCheck };
  /** The quota the stand-in enforced and the server paced during the resync (units per moving window). */
  quota: { unitsPerWindow: number; windowMs: number; profile: QuotaProfile };
  refused: number;
  /** The most units the stand-in charged the mailbox within any one window of the resync. */
  quotaPeak: number;
  resync: ResyncResult;
}
