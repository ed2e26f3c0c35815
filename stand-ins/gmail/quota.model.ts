/**
 * The Gmail stand-in's per-user quota: what each call costs (Google's 2026 table, or the legacy
 * one the bench was measured against), and a ledger that charges calls on arrival in a moving
 * window per mailbox, refuses what would pass the limit, and keeps what tests observe (the peak
 * within any window, the total, the units per endpoint).
 */

/** The endpoints that cost quota; the others (discovery, unknown paths) are free. */
export const QUOTA_ENDPOINTS = [
  'messages.get',
  'attachments.get',
  'threads.get',
  'threads.list',
  'messages.list',
  'history.list',
  'labels.get',
  'profile',
  'watch',
  'stop',
] as const;
export type QuotaEndpoint = (typeof QUOTA_ENDPOINTS)[number];
export type QuotaProfile = '2026' | 'legacy';
export type QuotaCosts = Readonly<Record<QuotaEndpoint, number>>;

/** Units per call under Google's 2026 Gmail limits: reading a message or thread costs four times what it did. */
export const QUOTA_COSTS_2026: QuotaCosts = Object.freeze({
  'messages.get': 20,
  'attachments.get': 20,
  'threads.get': 40,
  'threads.list': 10,
  'messages.list': 5,
  'history.list': 2,
  'labels.get': 1,
  profile: 1,
  watch: 100,
  stop: 50,
});

/** Units per call as Google documented them before 2026 (what `setQuota(number)` charges). */
export const QUOTA_COSTS_LEGACY: QuotaCosts = Object.freeze({
  ...QUOTA_COSTS_2026,
  'messages.get': 5,
  'attachments.get': 5,
  'threads.get': 10,
});

export const QUOTA_COSTS: Readonly<Record<QuotaProfile, QuotaCosts>> = Object.freeze({
  '2026': QUOTA_COSTS_2026,
  legacy: QUOTA_COSTS_LEGACY,
});

export interface QuotaSpec {
  /** Units a user may spend within any moving window; Infinity charges and observes without refusing. */
  unitsPerWindow: number;
  /** The moving window's length (default 60,000 ms: Google's per-user-per-minute limit). */
  windowMs?: number;
  /** Which cost table to charge (default '2026'). */
  profile?: QuotaProfile;
}

/** `setQuota`'s argument: units per moving second at legacy costs (the old form), a spec, or null for none. */
export type QuotaSetting = number | QuotaSpec | null;

export type QuotaVerdict = { charged: true } | { charged: false; retryAfterSeconds: number };

/**
 * One user's charges in arrival order, as parallel arrays with a head index so pruning the
 * window is amortised O(1) (a 60 s window of a fast backfill holds thousands of calls).
 */
interface UserLog {
  at: number[];
  units: number[];
  head: number;
  /** Units of the entries from `head` on: what the window holds now. */
  inWindow: number;
  /** The first entry charged since the observations were last reset, and the window's units from it on. */
  observedFrom: number;
  observedInWindow: number;
  peak: number;
  spent: number;
}

export class QuotaLedger {
  /** The quota in force; null: none, nothing is charged. */
  private limit: Required<QuotaSpec> | null = null;
  private readonly users = new Map<string, UserLog>();
  private readonly byEndpoint: Record<string, number> = {};

  /** Sets the quota; a fresh window for everyone, as a peak across two limits would mean nothing. */
  set(q: QuotaSetting): void {
    if (q === null) this.limit = null;
    else if (typeof q === 'number') this.limit = { unitsPerWindow: q, windowMs: 1000, profile: 'legacy' };
    else {
      const spec = { unitsPerWindow: q.unitsPerWindow, windowMs: q.windowMs ?? 60_000, profile: q.profile ?? '2026' };
      if (!(spec.unitsPerWindow >= 0))
        throw new Error(`gmail stand-in: quota unitsPerWindow ${spec.unitsPerWindow} is not a number >= 0`);
      if (!(spec.windowMs > 0 && Number.isFinite(spec.windowMs)))
        throw new Error(`gmail stand-in: quota windowMs ${spec.windowMs} is not a positive number`);
      if (!(spec.profile in QUOTA_COSTS))
        throw new Error(`gmail stand-in: unknown quota profile ${String(spec.profile)}`);
      this.limit = spec;
    }
    for (const log of this.users.values()) {
      log.head = log.at.length;
      log.inWindow = log.observedInWindow = log.peak = 0;
      log.observedFrom = log.at.length;
      compact(log);
    }
  }

  /** The units a call to `endpoint` costs under the quota in force; 0 when there is none. */
  cost(endpoint: string): number {
    return this.limit ? (QUOTA_COSTS[this.limit.profile][endpoint as QuotaEndpoint] ?? 0) : 0;
  }

  /**
   * Charges `units` to `user` at `now` unless the window (now - windowMs, now] would then hold
   * more than the limit; a refused call is not charged, and hears when enough of the window
   * will have freed for it (whole seconds, at least 1, as Retry-After carries them).
   */
  charge(user: string, units: number, now = Date.now(), endpoint?: string): QuotaVerdict {
    const limit = this.limit;
    if (limit === null || units <= 0) return { charged: true };
    const log = this.log(user);
    const start = now - limit.windowMs;
    while (log.head < log.at.length && log.at[log.head]! <= start) {
      log.inWindow -= log.units[log.head]!;
      if (log.head >= log.observedFrom) log.observedInWindow -= log.units[log.head]!;
      log.head++;
    }
    compact(log);
    if (log.inWindow + units > limit.unitsPerWindow)
      return { charged: false, retryAfterSeconds: Math.max(1, Math.ceil(freedAfter(log, units, limit, now) / 1000)) };
    log.at.push(now);
    log.units.push(units);
    log.inWindow += units;
    log.observedInWindow += units;
    log.peak = Math.max(log.peak, log.observedInWindow);
    log.spent += units;
    if (endpoint !== undefined) this.byEndpoint[endpoint] = (this.byEndpoint[endpoint] ?? 0) + units;
    return { charged: true };
  }

  /** The most units `user` was charged within any one window since the quota was set or the counters reset. */
  peak(user: string): number {
    return this.find(user)?.peak ?? 0;
  }

  /** The units charged to `user` since the counters were reset. */
  spent(user: string): number {
    return this.find(user)?.spent ?? 0;
  }

  /** The units charged per endpoint since the counters were reset (all users). A copy. */
  unitsByEndpoint(): Record<string, number> {
    return { ...this.byEndpoint };
  }

  /** Forgets what was observed; the window itself still counts what it holds, as the provider's would. */
  resetObservations(): void {
    for (const k of Object.keys(this.byEndpoint)) delete this.byEndpoint[k];
    for (const log of this.users.values()) {
      log.observedFrom = log.at.length;
      log.observedInWindow = log.peak = log.spent = 0;
    }
  }

  private find(user: string): UserLog | undefined {
    return this.users.get(user) ?? this.users.get(user.toLowerCase());
  }

  private log(user: string): UserLog {
    let log = this.users.get(user);
    if (!log) {
      log = { at: [], units: [], head: 0, inWindow: 0, observedFrom: 0, observedInWindow: 0, peak: 0, spent: 0 };
      this.users.set(user, log);
    }
    return log;
  }
}

/** Milliseconds from `now` until the window has room for `units`: the oldest entries leave it first. */
function freedAfter(log: UserLog, units: number, limit: Required<QuotaSpec>, now: number): number {
  let held = log.inWindow;
  for (let i = log.head; i < log.at.length; i++) {
    held -= log.units[i]!;
    if (held + units <= limit.unitsPerWindow) return log.at[i]! + limit.windowMs - now;
  }
  // More than the whole window allows: it never fits; say when the window is empty.
  return log.at.length > log.head ? log.at[log.at.length - 1]! + limit.windowMs - now : limit.windowMs;
}

/** Drops the pruned entries once they are the larger part, keeping the indices consistent. */
function compact(log: UserLog): void {
  if (log.head < 1024 && log.head < log.at.length) return;
  if (log.head * 2 < log.at.length) return;
  log.at.splice(0, log.head);
  log.units.splice(0, log.head);
  log.observedFrom = Math.max(0, log.observedFrom - log.head);
  log.head = 0;
}
