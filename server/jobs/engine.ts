/**
 * The job engine: pg-boss in the service's own PostgreSQL (schema `pgboss`, created and
 * migrated by pg-boss at start). Every instance enqueues and works; the database decides who
 * runs what, so a job runs once per cluster and survives restarts and crashes.
 *
 * Queues:
 * - `mail-sync` (policy `stately`, keyed by account: one job per state, created, retry, active):
 *   a request while a failed job waits for its retry is that retry's (brought forward when it
 *   must not wait), never a job beside it, so a job is dead-lettered only past its real retry
 *   limit, to `mail-sync-dead-letter` (kept, with its payload). A heartbeat hands a dead
 *   instance's job on within seconds. This module is the only one that reads pg-boss's tables.
 * - `auto-triage` (policy `stately`, keyed by account): analysis on arrival, one pass of a few
 *   threads per job, so accounts take turns (jobs/auto-triage.job.ts).
 * - `watch-renewal`, `quiet-sweep`, `purge-expired`: scheduled (cron, once per cluster
 *   whatever the number of instances), policy `singleton` so a slow run never overlaps the next.
 */
import { PgBoss, type Clock, type JobWithMetadata, type WorkOptions } from 'pg-boss';
import { errorSummary, type Logger } from '../infra/logger.ts';
import { currentTraceparent } from '../infra/trace-hooks.ts';
import {
  MAIL_SYNC_RETRY_LIMIT,
  QUEUES,
  queueOptions,
  SCHEDULES,
  type MailSyncRetry,
  type QueueName,
} from './queues.ts';
import { createWakePolicy, listenForJobs, notifyChannel, type WakePolicy } from './wakeups.ts';

export { MAIL_SYNC_RETRY_LIMIT, QUEUES, SCHEDULES, type MailSyncRetry, type QueueName } from './queues.ts';

export interface SyncRequest {
  accountId: string;
  /** Why the sync was asked for (logs only). */
  reason: 'sign-in' | 'notification' | 'continue' | 'busy' | 'quota' | 'paced' | 'sweep' | 'history-lag';
  /** When tracing runs: the W3C traceparent of the span that asked (set by enqueueSync), which the job's span links to. */
  trace?: string;
  /** Quota answers in a row before this job (its wait grew with each). */
  quotaStreak?: number;
}

export interface EnqueueOptions {
  /** Seconds before the job may start (a quota answer's Retry-After, a busy lease). */
  startAfterSeconds?: number;
}

export interface JobEngine {
  /**
   * Asks for a sync of the account; false when one is already waiting (it covers this request).
   * A notification or a sign-in that finds the waiting job deferred (history lag, quota, a busy
   * lease, a failure's backoff) brings it forward to now: its mail is stored within seconds.
   */
  enqueueSync(request: SyncRequest, opts?: EnqueueOptions): Promise<boolean>;
  /** Queues a job of `name` for the key (stately queues: false when one already waits for it). */
  enqueue(name: QueueName, data: object, opts: EnqueueOptions & { singletonKey: string }): Promise<boolean>;
  /**
   * Another key's job is ready to run: due now, and its key's job not running already (that one
   * waits for it, not for the asker). One indexed query.
   */
  othersWaiting(name: QueueName, exceptKey: string): Promise<boolean>;
  /** Starts now the key's deferred job whose payload's `reason` is the one given; false when none waits so. */
  bringForward(name: QueueName, singletonKey: string, reason: string): Promise<boolean>;
  /**
   * The account's sync retry waits (its job failed while the asker was being made): the asker,
   * which would otherwise run beside it, completes instead; the retry runs when its backoff
   * ends, or sooner when a notification brings it forward (enqueueSync).
   */
  retryWaits(singletonKey: string): Promise<boolean>;
  /**
   * Registers a handler on `localConcurrency` workers (default 1); with `perJobResults` it
   * answers each job's outcome (pg-boss settles them one by one). On a queue that notifies, a
   * new job wakes one idle worker of this instance (wakeups.ts), not all of them.
   */
  work<T extends object>(
    name: QueueName,
    options: WorkOptions,
    handler: (jobs: JobWithMetadata<T>[]) => Promise<unknown>,
  ): Promise<void>;
  /** Jobs waiting (ready or deferred) or running in a queue, from the engine's queue statistics (GET /metrics). */
  depth(name: QueueName): Promise<number>;
  /** Jobs of a queue in one state (tests, the status of an account). */
  count(name: QueueName, states?: string[], singletonKey?: string): Promise<number>;
  /**
   * The keys' jobs (null: every key's) as the engine's clock sees them, in one query: how many are
   * ready or running, how many running, and how long (ms) until the first deferred one is due
   * (null: none is). Tests move a test clock by it.
   */
  waiting(
    name: QueueName,
    singletonKeys: string[] | null,
  ): Promise<{ readyOrActive: number; active: number; nextDueMs: number | null }>;
  readonly boss: PgBoss;
  stop(): Promise<void>;
}

/** Requests from outside the job that a deferred job of the account must not hold back (runtime contract part 3). */
const BRINGS_FORWARD = new Set<SyncRequest['reason']>(['notification', 'sign-in']);

/** pg-boss's schema; its name also names the channel new jobs are notified on (wakeups.ts). */
const SCHEMA = 'pgboss';

/** Seconds between the engine's supervision passes (a dead instance's job is failed, to be retried, once its heartbeat lapsed). */
export const SUPERVISE_SECONDS = 10;

/**
 * `clock`: pg-boss's source of time, for its timers and (a TestClock) its database time, read
 * through `pgboss.job_now()`: every deferral, backoff and "ready now" of the engine is on it.
 */
export async function startJobEngine(deps: {
  databaseUrl: string;
  log: Logger;
  schedule?: boolean;
  retry?: MailSyncRetry;
  superviseSeconds?: number;
  clock?: Clock;
}): Promise<JobEngine> {
  const log = deps.log.child({ component: 'jobs' });
  const boss = new PgBoss({
    connectionString: deps.databaseUrl,
    schema: SCHEMA,
    application_name: 'mail-inbox-assistant-jobs',
    max: 4,
    // The instance listens itself and wakes one worker per job (wakeups.ts); pg-boss's own
    // listener would wake every worker of the queue. Inserts still notify (the queue's `notify`).
    useListenNotify: false,
    // The engine's own maintenance (expiry, heartbeats, retention) and cron run on every
    // instance; pg-boss elects one per pass through the database.
    supervise: true,
    schedule: deps.schedule ?? true,
    ...(deps.clock ? { clock: deps.clock } : {}),
    superviseIntervalSeconds: deps.superviseSeconds ?? SUPERVISE_SECONDS,
    // A pass needs both timers (jobs whose heartbeat lapsed are failed in the monitor's claim).
    monitorIntervalSeconds: deps.superviseSeconds ?? SUPERVISE_SECONDS,
    // The queue statistics a worker's burst reads (auto-triage.job.ts), as fresh as the monitor keeps them.
    queueCacheIntervalSeconds: deps.superviseSeconds ?? SUPERVISE_SECONDS,
  });
  boss.on('error', (err: unknown) => log.warn(errorSummary(err), 'job engine error'));
  await boss.start();
  // Created once per database; a later start brings an existing queue's options up to date
  // (pg-boss applies createQueue's options at creation only; the policy cannot change).
  const queues = queueOptions(deps.retry ?? { limit: MAIL_SYNC_RETRY_LIMIT, delaySeconds: 5 });
  for (const [name, options] of Object.entries(queues)) {
    const created = (await boss.getQueue(name))
      ? false
      : await boss.createQueue(name, options).then(
          () => true,
          async (err: unknown) => {
            if (!(await boss.getQueue(name))) throw err; // another instance created it meanwhile: fine
            return false;
          },
        );
    if (!created) {
      const { policy: _fixed, ...changeable } = options;
      await boss.updateQueue(name, changeable);
    }
  }
  if (deps.schedule ?? true)
    for (const [name, cron] of Object.entries(SCHEDULES)) await boss.schedule(name, cron, {}, { tz: 'UTC' });
  // Listening starts with the first workers of a queue that notifies (an instance that only enqueues never listens).
  const wakePolicies = new Map<string, WakePolicy>();
  const wakeups = listenForJobs({
    databaseUrl: deps.databaseUrl,
    log,
    channel: notifyChannel(SCHEMA),
    policies: wakePolicies,
  });
  const retryWaiting = async (key: string) =>
    (
      await boss
        .getDb()
        .executeSql(`select 1 from ${SCHEMA}.job where name = $1 and singleton_key = $2 and state = 'retry' limit 1`, [
          QUEUES.mailSync,
          key,
        ])
    ).rows.length > 0;

  return {
    boss,
    async enqueueSync(request, opts = {}) {
      const trace = currentTraceparent();
      const data = trace ? { ...request, trace } : request;
      const singletonKey = request.accountId;
      if (BRINGS_FORWARD.has(request.reason)) {
        // The key's waiting job, created or retrying (pg-boss upsert: the newest not yet active), starts now
        // with this payload; a job is made only when none waits. Now on the engine's clock (0 s from job_now()),
        // not this process's: a clock ahead of the database's would defer a notified job by the difference.
        const { inserted } = await boss.upsert(QUEUES.mailSync, data, { singletonKey, startAfter: 0 });
        return inserted > 0;
      }
      // A retry that waits covers the request: it runs when its backoff ends, and no job runs beside it.
      if (await retryWaiting(singletonKey)) return false;
      const id = await boss.send(QUEUES.mailSync, data, {
        singletonKey,
        ...(opts.startAfterSeconds ? { startAfter: Math.max(1, Math.ceil(opts.startAfterSeconds)) } : {}),
      });
      return id !== null;
    },
    async enqueue(name, data, opts) {
      const id = await boss.send(name, data, {
        singletonKey: opts.singletonKey,
        ...(opts.startAfterSeconds ? { startAfter: Math.max(1, Math.ceil(opts.startAfterSeconds)) } : {}),
      });
      return id !== null;
    },
    async othersWaiting(name, exceptKey) {
      const { rows } = await boss.getDb().executeSql(
        `select exists (select 1 from ${SCHEMA}.job j where j.name = $1 and j.state in ('created', 'retry') and j.start_after <= ${SCHEMA}.job_now()
           and j.singleton_key is distinct from $2
           and not exists (select 1 from ${SCHEMA}.job a where a.name = j.name and a.state = 'active' and a.singleton_key = j.singleton_key)) as waiting`,
        [name, exceptKey],
      );
      return (rows[0] as { waiting?: boolean } | undefined)?.waiting === true;
    },
    retryWaits: (singletonKey) => retryWaiting(singletonKey),
    async bringForward(name, singletonKey, reason) {
      // pg-boss's update cannot tell a job by its payload: one statement on its job table, here beside the engine's others.
      const { rows } = await boss.getDb().executeSql(
        `update ${SCHEMA}.job set start_after = ${SCHEMA}.job_now() where name = $1 and singleton_key = $2 and state in ('created', 'retry')
           and start_after > ${SCHEMA}.job_now() and data->>'reason' = $3 returning id`,
        [name, singletonKey, reason],
      );
      return rows.length > 0;
    },
    async work(name, options, handler) {
      const { localConcurrency = 1, ...each } = options;
      if (!queues[name].notify) {
        await boss.work(name, { ...options, includeMetadata: true }, handler as never);
        return;
      }
      // One pg-boss worker per place, so that each can be woken on its own.
      const ids: string[] = [];
      const policy = createWakePolicy(ids, (id) => boss.notifyWorker(id));
      for (let i = 0; i < localConcurrency; i++) {
        let id = '';
        const tracked = async (jobs: JobWithMetadata<never>[]) => {
          policy.started(id);
          try {
            return await handler(jobs);
          } finally {
            policy.finished(id);
          }
        };
        id = await boss.work(name, { ...each, includeMetadata: true }, tracked as never);
        ids.push(id);
      }
      if (!wakePolicies.size) await wakeups.start();
      wakePolicies.set(name, policy);
    },
    async depth(name) {
      // The counts pg-boss's monitor keeps on the queue (refreshed every monitor interval), not job rows.
      const [stats] = await boss.getQueueStats(name);
      return stats ? stats.queuedCount + stats.activeCount : 0;
    },
    async count(name, states = ['created', 'retry', 'active'], singletonKey) {
      const jobs = await boss.findJobs(name, singletonKey ? { key: singletonKey } : {});
      return jobs.filter((j) => states.includes(j.state)).length;
    },
    async waiting(name, singletonKeys) {
      const { rows } = await boss.getDb().executeSql(
        `select count(*) filter (where state = 'active' or start_after <= ${SCHEMA}.job_now())::int as ready, count(*) filter (where state = 'active')::int as active,
                extract(epoch from min(start_after) filter (where state in ('created', 'retry') and start_after > ${SCHEMA}.job_now()) - ${SCHEMA}.job_now()) * 1000 as due
           from ${SCHEMA}.job where name = $1 and ($2::text[] is null or singleton_key = any($2::text[])) and state in ('created', 'retry', 'active')`,
        [name, singletonKeys],
      );
      const row = rows[0] as { ready: number; active: number; due: string | number | null } | undefined;
      return {
        readyOrActive: row?.ready ?? 0,
        active: row?.active ?? 0,
        nextDueMs: row?.due == null ? null : Math.ceil(Number(row.due)),
      };
    },
    async stop() {
      await wakeups.stop();
      // Running handlers finish (their syncs commit); nothing new is fetched.
      await boss.stop({ graceful: true, timeout: 30_000 });
    },
  };
}
