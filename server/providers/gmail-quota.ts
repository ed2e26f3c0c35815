/**
 * The mail provider's quota (runtime contract part 3 "Quota"): every call is charged to its
 * account at the configured profile's cost and paced within the per-user limit through a
 * ledger that every instance shares (PostgreSQL: domain/mail-quota/), so no instance spends
 * past the limit in any window and the provider never refuses the service for quota.
 *
 * - **Lanes**: a call's purpose puts it in one of three lanes. Bulk work (backfill, resync)
 *   may fill only LANE_SHARE.bulk of the window, incremental syncs a little more, the user's
 *   own requests all of it: the user and notified mail always find room beside a backfill, and
 *   once they spend more than that reserve in a window, bulk yields them what they spent past it.
 * - **Batches**: a grant is taken for what the caller expects to spend next (a batch of
 *   `messages.get`, a history read and its first message), kept as this instance's credit for
 *   a second (creditMsOf) and spent locally; one statement pays for many calls. Credit not spent in
 *   time lapses (it stays counted: the ledger cannot know it was not spent). The window the
 *   ledger counts is the provider's plus that lifetime and a skew allowance, so that a call
 *   sent at the end of its credit's life still lies inside the window it was counted in.
 * - **Waits**: a call that finds no room waits for it up to its lane's bound; past that it
 *   fails as MAIL_RATE_LIMITED with the honest wait as Retry-After and a QuotaWait cause (our
 *   own pacing, not a provider refusal: the sync job defers by exactly that wait).
 * - **The day**: units are counted per UTC day, method and purpose, flushed to the database in
 *   one statement every few seconds; once the deployment's day passes GMAIL_DAILY_UNIT_BUDGET,
 *   bulk calls wait for the next UTC day while every other lane goes on.
 */
import { AppError } from '../domain/errors.ts';

export type QuotaPurpose = 'open' | 'sync' | 'incremental' | 'watch' | 'backfill' | 'resync' | 'triage';
export type QuotaLane = 'user' | 'incremental' | 'bulk';
export type QuotaMethod =
  | 'profile'
  | 'labels.get'
  | 'messages.list'
  | 'messages.get'
  | 'attachments.get'
  | 'threads.get'
  | 'threads.list'
  | 'history.list'
  | 'watch'
  | 'stop';
export type QuotaProfileName = '2026' | 'legacy';

export const LANE_OF: Readonly<Record<QuotaPurpose, QuotaLane>> = {
  open: 'user',
  sync: 'user',
  incremental: 'incremental',
  watch: 'incremental',
  backfill: 'bulk',
  resync: 'bulk',
  // Analysis on arrival reads the thread's bodies in the background: it gives way to the user and to fresh mail.
  triage: 'bulk',
};

const COSTS_2026: Record<QuotaMethod, number> = {
  profile: 1,
  'labels.get': 1,
  'messages.list': 5,
  'messages.get': 20,
  'attachments.get': 20,
  'threads.get': 40,
  'threads.list': 10,
  'history.list': 2,
  watch: 100,
  stop: 50,
};

/** Google's two sets of limits (its "Gmail API usage limits" page). */
export const QUOTA_PROFILES: Readonly<
  Record<QuotaProfileName, { userUnitsPerMinute: number; costs: Readonly<Record<QuotaMethod, number>> }>
> = {
  '2026': { userUnitsPerMinute: 6_000, costs: COSTS_2026 },
  legacy: {
    userUnitsPerMinute: 15_000,
    costs: { ...COSTS_2026, 'messages.get': 5, 'attachments.get': 5, 'threads.get': 10 },
  },
};

/** The share of the per-user window each lane may fill (what is left above a lane's share is the lanes' above it). */
export const LANE_SHARE: Readonly<Record<QuotaLane, number>> = { user: 1, incremental: 0.98, bulk: 0.95 };
/** How long a lane waits in-process for room before it answers MAIL_RATE_LIMITED (a request must answer; a bulk call ends and its job defers). */
const MAX_WAIT_MS: Readonly<Record<QuotaLane, number>> = { user: 2_500, incremental: 5_000, bulk: 1_000 };
/** The most one grant takes, as a share of the window (a batch of 25 `messages.get` at the 2026 limit). */
const BLOCK_SHARE = 0.085;
/** How long a grant's credit may be spent (a 60 s window; a scaled-down one, for the bench and tests, scales it down too). */
const CREDIT_TTL_MS = 1_000;
/** Added to the provider's window beside the credit's lifetime: the time a request takes to arrive, with room for a stalled loop. */
const SKEW_MS = 500;
const creditMsOf = (windowMs: number) => Math.max(100, Math.min(CREDIT_TTL_MS, windowMs / 60));
const skewMsOf = (windowMs: number) => Math.max(250, Math.min(SKEW_MS, windowMs / 120));

/** Why a call waits: room in the account's window, or the deployment's daily budget (bulk only). */
export class QuotaWait extends Error {
  readonly reason: 'window' | 'daily';
  readonly waitMs: number;
  constructor(reason: 'window' | 'daily', waitMs: number) {
    super(
      reason === 'daily'
        ? 'the daily mail quota budget is spent; bulk work waits for the next UTC day'
        : "the account's mail quota window is full",
    );
    this.name = 'QuotaWait';
    this.reason = reason;
    this.waitMs = waitMs;
  }
}

/** What the pacer needs of the database (domain/mail-quota/quota-ledger.ts). */
export interface QuotaLedger {
  /**
   * Grants `want` units (at least `min`) within `cap` units per `windowMs` for the account, or says how long until `min` fits.
   * Bulk's cap shrinks by what the other lanes spent in the window past `reserve` (the room bulk always leaves them).
   */
  take(r: {
    accountId: string;
    lane: QuotaLane;
    want: number;
    min: number;
    cap: number;
    windowMs: number;
    reserve: number;
  }): Promise<{ granted: number; waitMs: number }>;
  /** Adds spent units to the deployment's days; answers the units of `today` (every instance's). */
  record(rows: { day: string; method: string; purpose: string; units: number }[], today: string): Promise<number>;
}

export interface QuotaOptions {
  profile: QuotaProfileName;
  /** Per-user units per window (default: the profile's per minute); 0: calls are counted, never paced. */
  userUnits?: number;
  /** The deployment's units per UTC day before bulk work waits. */
  dailyBudget: number;
  /** The provider's window (60 s; tests shorten it). */
  windowMs?: number;
  /**
   * The time a request may take from its grant to the provider beside the credit's lifetime
   * (default: 500 ms for a 60 s window, at least 250). Tests that shorten the window on a loaded
   * machine widen it: there a stalled loop is a larger share of the window.
   */
  skewMs?: number;
  /** How often spent units are flushed to the day ledger. */
  flushMs?: number;
  /** The clock that decides the UTC day (tests move it). */
  now?: () => Date;
  /** Each spend, for the metric. */
  onSpend?: (method: QuotaMethod, purpose: QuotaPurpose, units: number) => void;
  /** A flush that failed (its units are flushed again with the next). */
  onFlushError?: (err: unknown) => void;
}

export interface QuotaPacer {
  /** Charges one call; resolves when it may be sent. `expect`: units the caller will spend right after it (taken in the same grant). */
  take(accountId: string | undefined, purpose: QuotaPurpose, method: QuotaMethod, expect?: number): Promise<void>;
  cost(method: QuotaMethod): number;
  /** Units the deployment spent today, as last read (flushes first). */
  today(): Promise<number>;
  /** Flushes what is left and stops the timer. */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const utcDay = (d: Date) => d.toISOString().slice(0, 10);
const msToNextUtcDay = (d: Date) => 86_400_000 - (d.getTime() % 86_400_000);

export function createQuotaPacer(ledger: QuotaLedger, opts: QuotaOptions): QuotaPacer {
  const profile = QUOTA_PROFILES[opts.profile];
  const windowMs = opts.windowMs ?? 60_000;
  const creditMs = creditMsOf(windowMs);
  /** The window the ledger counts: a grant's units may arrive at the provider up to creditMs + skew after it was taken. */
  const ledgerWindowMs = windowMs + creditMs + (opts.skewMs ?? skewMsOf(windowMs));
  const limit = opts.userUnits ?? profile.userUnitsPerMinute;
  const now = opts.now ?? (() => new Date());
  const credits = new Map<string, { units: number; until: number; turn: Promise<void> }>();
  /** Spent and not yet flushed: day|method|purpose -> units. */
  let pending = new Map<string, number>();
  /** The deployment's units of `day` as last read, plus this instance's since. */
  let today = { day: utcDay(now()), units: 0 };
  const dayOf = () => {
    const day = utcDay(now());
    if (today.day !== day) today = { day, units: 0 };
    return today;
  };
  let flushing: Promise<void> = Promise.resolve();

  const flush = () =>
    (flushing = flushing.then(async () => {
      const rows = [...pending].map(([k, units]) => {
        const [day, method, purpose] = k.split('|') as [string, string, string];
        return { day, method, purpose, units };
      });
      pending = new Map();
      try {
        const day = utcDay(now());
        const units = await ledger.record(rows, day);
        // The cluster's units of the day, and what this instance spent while the statement ran (not in it yet).
        let since = 0;
        for (const [k, u] of pending) if (k.startsWith(`${day}|`)) since += u;
        if (dayOf().day === day) today.units = units + since;
      } catch (err) {
        // The database is away: the units are counted again at the next flush.
        opts.onFlushError?.(err);
        for (const r of rows) {
          const k = `${r.day}|${r.method}|${r.purpose}`;
          pending.set(k, (pending.get(k) ?? 0) + r.units);
        }
      }
    }));
  const timer = setInterval(() => void flush(), opts.flushMs ?? 5_000);
  timer.unref();

  const spent = (method: QuotaMethod, purpose: QuotaPurpose, units: number) => {
    const k = `${utcDay(now())}|${method}|${purpose}`;
    pending.set(k, (pending.get(k) ?? 0) + units);
    dayOf().units += units;
    opts.onSpend?.(method, purpose, units);
  };

  /** Waits for `units` of the lane's room in the account's window (one caller of a key at a time, in order). */
  async function pace(accountId: string, lane: QuotaLane, units: number, expect: number): Promise<void> {
    const key = `${accountId}|${lane}`;
    let c = credits.get(key);
    if (!c) credits.set(key, (c = { units: 0, until: Date.now(), turn: Promise.resolve() }));
    const entry = c;
    const mine = entry.turn.then(async () => {
      const cap = Math.max(1, Math.floor(limit * LANE_SHARE[lane]));
      const deadline = Date.now() + MAX_WAIT_MS[lane];
      for (;;) {
        if (entry.units >= units && Date.now() < entry.until) {
          entry.units -= units;
          return;
        }
        const want = Math.max(units, Math.min(expect, Math.floor(limit * BLOCK_SHARE)));
        const g = await ledger.take({
          accountId,
          lane,
          want,
          min: units,
          cap,
          windowMs: ledgerWindowMs,
          reserve: limit - cap,
        });
        if (g.granted > 0) {
          entry.units = g.granted - units;
          entry.until = Date.now() + creditMs;
          return;
        }
        if (Date.now() + g.waitMs > deadline) throw new QuotaWait('window', g.waitMs);
        await sleep(g.waitMs);
      }
    });
    entry.turn = mine.catch(() => undefined);
    // Forgets accounts not seen for a window (a long-lived instance meets many).
    if (credits.size > 5_000)
      for (const [k, x] of credits) if (x !== entry && x.until < Date.now() - windowMs) credits.delete(k);
    await mine;
  }

  return {
    cost: (method) => profile.costs[method],
    async take(accountId, purpose, method, expect = 0) {
      const units = profile.costs[method];
      const lane = LANE_OF[purpose];
      if (lane === 'bulk' && dayOf().units >= opts.dailyBudget) {
        const wait = msToNextUtcDay(now());
        throw new AppError('MAIL_RATE_LIMITED', {
          retryAfter: Math.ceil(wait / 1000),
          cause: new QuotaWait('daily', wait),
        });
      }
      if (limit > 0 && accountId) {
        try {
          await pace(accountId, lane, units, Math.max(units, expect));
        } catch (err) {
          if (!(err instanceof QuotaWait)) throw err;
          throw new AppError('MAIL_RATE_LIMITED', {
            retryAfter: Math.max(1, Math.ceil(err.waitMs / 1000)),
            cause: err,
          });
        }
      }
      spent(method, purpose, units);
    },
    async today() {
      await flush();
      return dayOf().units;
    },
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
