/**
 * Virtual time for the live-inbox model tests, and the oracle of what runs when.
 *
 * `ModelTime` is pg-boss's own TestClock (pg-boss 12.38), given to every instance's job engine
 * through the container (`overrides.liveInbox.clock`): pg-boss's timers (polls, heartbeats,
 * supervision, cron) fire only when the model moves time, and its database time,
 * `pgboss.job_now()`, is the clock's, so every deferral (a busy lease, a quota wait, history
 * lag) and every retry's backoff comes due only once the model advanced that much virtual time,
 * never because a helper pulled it to now. The schedule's Pub/Sub queues (ModelQueue) follow
 * the same clock. Leases and the rows of `sync_states` stay on the database's real clock.
 *
 * `DeferralOracle` checks, from outside the engine, that no job starts early: a job the worker
 * deferred by s seconds starts only after s seconds of virtual time, and a retry only after
 * its attempt's start plus the backoff pg-boss promises (its retry delay, doubled per retry,
 * capped), unless a notification or a sign-in brought the account's job forward meanwhile (as
 * the engine's contract says it must).
 */
import { TestClock, type JobWithMetadata } from 'pg-boss';
import type { SyncRequest } from '../../../server/jobs/engine.ts';

/** While a job runs, time is ticked through in steps this long (its heartbeat, every 5 s, beats in each). */
const RUNNING_STEP_MS = 5_000;

/** What the clock needs of an engine: its mail-sync jobs as its clock sees them (JobEngine.waiting). */
interface Watched {
  waiting(name: 'mail-sync', keys: null): Promise<{ active: number; nextDueMs: number | null }>;
}

export class ModelTime {
  readonly clock = new TestClock();
  private readonly followers: { advance(ms: number): void }[] = [];
  private readonly engines = new Set<Watched>();
  /** The time an advance in progress started from (a lower bound of the database's time meanwhile). */
  private from: number | null = null;
  /** Virtual ms moved so far, and the wall-clock ms the moves took (pg-boss's timers firing). */
  moved = 0;
  spentMs = 0;
  steps = { jumps: 0, ticks: 0 };

  /** The queue's time moves with the clock (until the returned function is called). */
  follow(queue: { advance(ms: number): void }): () => void {
    this.followers.push(queue);
    return () => void this.followers.splice(this.followers.indexOf(queue), 1);
  }

  /** An engine on this clock: while it runs a job, time is ticked through (a jump past its heartbeat would fail it as dead). */
  watch(engine: Watched): void {
    this.engines.add(engine);
  }

  now(): number {
    return this.clock.now();
  }

  /** A time the database's `job_now()` is at or past: the start of an advance in progress, else now. */
  floor(): number {
    return this.from ?? this.clock.now();
  }

  /**
   * Time passes. While a job runs, every timer due meanwhile fires in order (pg-boss's polls,
   * heartbeats, supervision), in steps of RUNNING_STEP_MS; while none runs, time jumps to the next
   * deferred job's start (or the end), each overdue timer firing once, as after a sleep: the
   * result is the same, and idle virtual hours cost a few statements.
   */
  async advance(ms: number): Promise<void> {
    if (ms <= 0) return;
    for (const f of this.followers) f.advance(ms);
    this.moved += ms;
    const target = this.clock.now() + ms;
    const started = Date.now();
    try {
      while (this.clock.now() < target) {
        this.from = this.clock.now();
        const left = target - this.clock.now();
        const { active, nextDueMs } = await this.look();
        if (active > 0) {
          this.steps.ticks++;
          await this.clock.tick(Math.min(left, RUNNING_STEP_MS));
        } else {
          this.steps.jumps++;
          await this.clock.setTime(this.clock.now() + Math.min(left, Math.max(1, nextDueMs ?? left)));
          await this.clock.tick(0);
        }
      }
    } finally {
      this.from = null;
      this.spentMs += Date.now() - started;
    }
  }

  private async look(): Promise<{ active: number; nextDueMs: number | null }> {
    let active = 0;
    let nextDueMs: number | null = null;
    for (const e of this.engines) {
      const w = await e.waiting('mail-sync', null);
      active += w.active;
      if (w.nextDueMs !== null) nextDueMs = Math.min(nextDueMs ?? Infinity, w.nextDueMs);
    }
    return { active, nextDueMs };
  }
}

/** The least wait pg-boss gives a job's retry number `retryCount` (its backoff: delay × 2^(n-1) × (1 + random), capped). */
export function minimumBackoffMs(
  job: Pick<JobWithMetadata, 'retryCount' | 'retryDelay' | 'retryBackoff' | 'retryDelayMax'>,
): number {
  const delay = Math.max(1, job.retryDelay);
  const seconds = job.retryBackoff
    ? Math.min(job.retryDelayMax ?? Infinity, delay * 2 ** Math.max(0, job.retryCount - 1))
    : job.retryDelay;
  return seconds * 1000;
}

export class DeferralOracle {
  readonly violations: string[] = [];
  /** What was checked over a run (printed: a run that checks nothing shows it). */
  readonly tally = { deferrals: 0, deferredRuns: 0, retries: 0, broughtForward: 0, maxDeferralMs: 0, maxBackoffMs: 0 };
  /** Each job's last attempt: the virtual time it started at (a lower bound) and its place among the events. */
  private readonly attempts = new Map<string, { at: number; seq: number }>();
  private readonly due = new Map<string, { at: number; due: number; reason: string; seq: number }>();
  /**
   * Per account, bring-forwards by their place among the events (virtual time may not move in
   * between): how many are in flight, and where the last one ended (its upsert may land on a
   * job inserted after it began, so it counts until it ended).
   */
  private readonly forwards = new Map<string, { inFlight: number; endSeq: number }>();
  private seq = 0;

  private readonly time: ModelTime;

  constructor(time: ModelTime) {
    this.time = time;
  }

  /** A notification or a sign-in asks for the account's sync: its waiting job may start at once. Call the answer once the request returned. */
  broughtForward(accountId: string): () => void {
    const f = this.forwards.get(accountId) ?? { inFlight: 0, endSeq: -1 };
    this.forwards.set(accountId, f);
    f.inFlight++;
    return () => {
      f.inFlight--;
      f.endSeq = ++this.seq;
    };
  }

  /** Whether a bring-forward of the account may have moved a job deferred (or attempted) at event `seq`. */
  private forwardedSince(accountId: string, seq: number): boolean {
    const f = this.forwards.get(accountId);
    return !!f && (f.inFlight > 0 || f.endSeq > seq);
  }

  /** A place among the events, taken before a request whose outcome is recorded later (`deferred`). */
  mark(): number {
    return ++this.seq;
  }

  /** The worker deferred the account's new job `jobId` by `seconds` (asked at virtual time `at`, after event `seq`). */
  deferred(jobId: string, reason: string, seconds: number, at: number, seq: number): void {
    // The engine rounds up to whole seconds, at least one.
    const ms = Math.max(1, Math.ceil(seconds)) * 1000;
    this.due.set(jobId, { at, due: at + ms, reason, seq });
    this.tally.deferrals++;
    this.tally.maxDeferralMs = Math.max(this.tally.maxDeferralMs, ms);
  }

  /** A job attempt is handed to a handler: it must not be early. */
  started(job: JobWithMetadata<SyncRequest>, instance: number): void {
    const now = this.time.now();
    const forwarded = (seq: number) => this.forwardedSince(job.data.accountId, seq);
    const what = `job ${job.id} of ${job.data.accountId} (${job.data.reason}, attempt ${job.retryCount + 1}) on instance ${instance}`;
    const previous = this.attempts.get(job.id);
    if (job.retryCount > 0 && previous && !forwarded(previous.seq)) {
      const wait = minimumBackoffMs(job);
      this.tally.retries++;
      this.tally.maxBackoffMs = Math.max(this.tally.maxBackoffMs, wait);
      if (now < previous.at + wait)
        this.violations.push(
          `${what} started ${now - previous.at} ms of virtual time after its previous attempt, before its backoff of ${wait} ms`,
        );
    } else if (job.retryCount > 0 && previous) this.tally.broughtForward++;
    const d = this.due.get(job.id);
    if (job.retryCount === 0 && d && !forwarded(d.seq)) {
      this.tally.deferredRuns++;
      if (now < d.due)
        this.violations.push(
          `${what} started ${now - d.at} ms of virtual time after it was deferred by ${d.due - d.at} ms (${d.reason})`,
        );
    }
    this.attempts.set(job.id, { at: this.time.floor(), seq: ++this.seq });
  }
}
