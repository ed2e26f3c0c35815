/**
 * The production worker loop, as the model tests drive it: the real `mail-sync` worker started
 * on an instance's job engine (pg-boss `work`: its polling, batches, per-job settlement,
 * heartbeats, stop), on a sync service whose provider client records which account each call
 * was for and can be interrupted, all on the schedule's virtual time (model-time.ts):
 *  - `readHook` (shared by the instances of a schedule): run once after the next history or
 *    inbox read of any of them (the mailbox changing mid-sync, a lease lost before the commit);
 *  - `crashAfterCommit(account)`: the account's next job commits its sync, then its process
 *    "dies": the handler never returns, its job stays active, until `recoverCrashes` fails it as
 *    the supervisor does once a heartbeat lapsed (a retry, with its backoff), then lets the dead
 *    handler return late (its settle is fenced to the old attempt: a no-op);
 *  - `loseJob(account)`: the account's running job loses its claim as a stalled process's does.
 * Time passes only where the schedule says (`untilDue` moves the clock to the next deferred job).
 * Every job handed to a handler is shown to the DeferralOracle, and every job the worker defers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobWithMetadata } from 'pg-boss';
import { AppError } from '../../../server/domain/errors.ts';
import { createSyncService, type SyncOutcome } from '../../../server/domain/mail/sync/sync.service.ts';
import { QUEUES, type JobEngine, type SyncRequest } from '../../../server/jobs/engine.ts';
import { createMailSyncWorker } from '../../../server/jobs/mail-sync.job.ts';
import type { Logger } from '../../../server/infra/logger.ts';
import type { GmailApi, GmailFactory } from '../../../server/providers/gmail.ts';
import type { TestApp } from '../../helpers/app.ts';
import type { DeferralOracle, ModelTime } from './model-time.ts';

export interface ReadHook {
  fn: ((instance: number) => Promise<void>) | null;
}

export interface ModelLoop {
  readonly instance: number;
  readonly engine: JobEngine;
  /** Provider calls made for each account (ms timestamps). */
  readonly calls: Map<string, number[]>;
  /** Errors a sync or a user's action must never give: anything but the service's own (a deadlock, a bug). */
  readonly internalErrors: string[];
  /** Sync calls that committed, per account. */
  readonly commits: Map<string, number>;
  /** Sync calls that ended (committed or not), per account. */
  readonly ended: Map<string, number>;
  /** The job a handler of this instance runs for the account, if any. */
  jobOf(accountId: string): string | undefined;
  /** The route's sync (POST /api/mail/sync): same service, same page size. */
  routeSync(accountId: string, opts?: { fullResync?: boolean }): Promise<SyncOutcome | undefined>;
  crashAfterCommit(accountId: string): void;
  /** Accounts whose job is stuck in a dead handler. */
  crashedAccounts(): Set<string>;
  recoverCrashes(): Promise<number>;
  /** The account's running job loses its claim (heartbeat lapsed, failed by the supervisor): true when one ran. */
  loseJob(accountId: string): Promise<boolean>;
  /** Sync calls running now. */
  readonly inFlight: number;
  /** Sync calls started so far (a settled world makes none). */
  readonly syncsRun: number;
  /** Sync calls ended so far, committed or failed (one that began before a moment may end after it). */
  readonly syncsEnded: number;
  wake(): void;
  /** The worker shuts down as at a deploy: jobs in flight commit their call and queue the rest (no waiting here). */
  stopping(): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface ModelLoopDeps {
  app: TestApp;
  /** Which instance of the schedule this is (0: the first app). */
  instance?: number;
  /** The provider client the loop's syncs use (the loop records and hooks its calls). */
  gmail: GmailFactory;
  page: number;
  callsPerJob: number;
  log: Logger;
  time: ModelTime;
  oracle: DeferralOracle;
  hook: ReadHook;
  /** Engine workers × jobs per fetch (default 2 × 3; production 8 × 8). */
  concurrency?: { workers: number; batch: number };
}

const BRINGS_FORWARD = new Set(['notification', 'sign-in']);

export function createModelLoop(deps: ModelLoopDeps): ModelLoop {
  const { app, time, oracle } = deps;
  const instance = deps.instance ?? 0;
  const engine = app.container.liveInbox.engine;
  const sql = <T>(q: string, params: unknown[]) => app.container.orm.em.fork().execute(q, params) as Promise<T[]>;
  const calls = new Map<string, number[]>();
  const commits = new Map<string, number>();
  const ended = new Map<string, number>();
  const internalErrors: string[] = [];
  const crashNext = new Set<string>();
  const crashed: { accountId: string; release: () => void }[] = [];
  const jobs = new Map<string, string>();
  let inFlight = 0;
  let syncsRun = 0;

  const gmail: GmailFactory = (auth, quota) => {
    const api = deps.gmail(auth, quota);
    const accountId = quota?.accountId;
    const note = () => {
      if (!accountId) return;
      const list = calls.get(accountId) ?? [];
      list.push(Date.now());
      calls.set(accountId, list);
    };
    const fire = async () => {
      const h = deps.hook.fn;
      deps.hook.fn = null;
      if (h) await h(instance);
    };
    return {
      get requests() {
        return api.requests;
      },
      listInbox: async (p) => (note(), await api.listInbox(p).finally(fire)),
      listHistory: async (id) => (note(), await api.listHistory(id).finally(fire)),
      getMetadata: (ids) => (note(), api.getMetadata(ids)),
      getThreadFull: (id, each) => (note(), api.getThreadFull(id, each)),
      inboxCount: () => (note(), api.inboxCount?.() ?? Promise.resolve(null)),
      profile: () => (note(), api.profile()),
      watch: (p) => (note(), api.watch(p)),
      stop: () => (note(), api.stop()),
    } satisfies GmailApi;
  };
  const sync = createSyncService({
    orm: app.container.orm,
    gmail,
    credentials: app.container.credentials,
    log: deps.log,
  });
  const internal = (err: unknown) => !(err instanceof AppError) || err.code === 'INTERNAL_ERROR';
  const run = async (accountId: string, opts: { fullResync?: boolean }) => {
    inFlight++;
    loopTally.maxInFlight = Math.max(loopTally.maxInFlight, inFlight);
    syncsRun++;
    try {
      const outcome = await sync.syncAccount(accountId, { ...opts, maxMessages: deps.page });
      commits.set(accountId, (commits.get(accountId) ?? 0) + 1);
      return outcome;
    } catch (err) {
      if (internal(err))
        internalErrors.push(`sync of ${accountId} on instance ${instance}: ${String((err as Error).stack ?? err)}`);
      throw err;
    } finally {
      inFlight--;
      ended.set(accountId, (ended.get(accountId) ?? 0) + 1);
    }
  };

  // The worker's engine, watched: what it defers (the oracle checks the job starts no earlier), and each job it is handed.
  const watched: JobEngine = {
    ...engine,
    async enqueueSync(request, opts) {
      const at = time.floor();
      const seq = oracle.mark();
      const done = BRINGS_FORWARD.has(request.reason) ? oracle.broughtForward(request.accountId) : () => undefined;
      const stored = await engine.enqueueSync(request, opts).finally(done);
      if (stored && opts?.startAfterSeconds) {
        const waiting = (await engine.boss.findJobs<SyncRequest>(QUEUES.mailSync, { key: request.accountId })).filter(
          (j) => j.state === 'created',
        );
        for (const j of waiting) oracle.deferred(j.id, request.reason, opts.startAfterSeconds, at, seq);
      }
      return stored;
    },
    work(name, options, handler) {
      return engine.work<SyncRequest>(name, options, async (batch: JobWithMetadata<SyncRequest>[]) => {
        for (const job of batch) {
          oracle.started(job, instance);
          jobs.set(job.data.accountId, job.id);
        }
        try {
          return await (handler as (j: JobWithMetadata<SyncRequest>[]) => Promise<unknown>)(batch);
        } finally {
          for (const job of batch) if (jobs.get(job.data.accountId) === job.id) jobs.delete(job.data.accountId);
        }
      });
    },
  };
  const worker = createMailSyncWorker({
    orm: app.container.orm,
    engine: watched,
    log: deps.log,
    callsPerJob: deps.callsPerJob,
    historyLag: { firstSeconds: 1, windowSeconds: 4 },
    concurrency: deps.concurrency ?? { workers: 2, batch: 3 },
    sync: {
      async syncAccount(accountId) {
        const outcome = await run(accountId, {});
        if (crashNext.delete(accountId)) await new Promise<void>((release) => crashed.push({ accountId, release }));
        return outcome;
      },
    },
  });
  const wake = () => {
    for (const w of engine.boss.getWipData()) if (w.name === QUEUES.mailSync) engine.boss.notifyWorker(w.id);
  };
  /**
   * Stands for a dead or stalled process whose heartbeat stopped: the engine fails its running job
   * (a retry, with its backoff), as the supervisor does once the heartbeat lapsed. (The supervisor
   * itself claims its passes on the engine's clock, so it would act only once virtual time moved,
   * while this process's heartbeat keeps beating; the handler that outlives its claim is the point.)
   */
  const lapse = async (accountIds: string[]) => {
    let failed = 0;
    for (const accountId of accountIds) {
      for (const job of await engine.boss.findJobs<SyncRequest>(QUEUES.mailSync, { key: accountId })) {
        if (job.state !== 'active') continue;
        await engine.boss.fail(QUEUES.mailSync, job.id, { message: 'the process running it stopped' });
        failed++;
      }
    }
    return failed;
  };
  time.watch(engine);

  const loop: ModelLoop = {
    instance,
    engine,
    calls,
    commits,
    ended,
    internalErrors,
    jobOf: (accountId) => jobs.get(accountId),
    get inFlight() {
      return inFlight;
    },
    get syncsRun() {
      return syncsRun;
    },
    get syncsEnded() {
      return [...ended.values()].reduce((a, b) => a + b, 0);
    },
    wake,
    routeSync: (accountId, opts = {}) => run(accountId, opts).catch(() => undefined),
    crashAfterCommit: (accountId) => void crashNext.add(accountId),
    crashedAccounts: () => new Set(crashed.map((c) => c.accountId)),
    async recoverCrashes() {
      const dead = crashed.splice(0);
      if (!dead.length) return 0;
      await lapse(dead.map((d) => d.accountId));
      for (const d of dead) d.release();
      return dead.length;
    },
    loseJob: async (accountId) => (await lapse([accountId])) > 0,
    stopping: () => worker.stop(),
    async start() {
      crashNext.clear();
      await worker.start();
    },
    async stop() {
      crashNext.clear();
      await loop.recoverCrashes();
      worker.stop();
      await engine.boss.offWork(QUEUES.mailSync, { wait: true });
    },
  };
  return loop;
}

/**
 * The engine as the intake and sign-in use it, telling the oracle that a notification or a
 * sign-in may bring the account's waiting job forward, from before the request (the job may
 * start at once) until it returned (its upsert may land on a job inserted meanwhile).
 */
export function forwarding(engine: JobEngine, oracle: DeferralOracle): Pick<JobEngine, 'enqueueSync'> {
  return {
    async enqueueSync(request, opts) {
      if (!BRINGS_FORWARD.has(request.reason)) return engine.enqueueSync(request, opts);
      const done = oracle.broughtForward(request.accountId);
      try {
        return await engine.enqueueSync(request, opts);
      } finally {
        done();
      }
    },
  };
}

/** Until no job of these accounts is ready or running (crashed ones aside) and no loop runs a sync. */
/** Wall-clock ms spent waiting for the loops to go idle, and the most syncs one loop ran at once (printed by the tests). */
export const loopTally = { idleMs: 0, idleWaits: 0, maxInFlight: 0 };

export async function idleAll(
  loops: ModelLoop[],
  accountIds: string[],
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const started = Date.now();
  try {
    await idleWithin(loops, accountIds, what, started + timeoutMs);
  } finally {
    loopTally.idleMs += Date.now() - started;
    loopTally.idleWaits++;
  }
}

async function idleWithin(loops: ModelLoop[], accountIds: string[], what: string, deadline: number): Promise<void> {
  for (;;) {
    const dead = new Set(loops.flatMap((l) => [...l.crashedAccounts()]));
    const live = accountIds.filter((id) => !dead.has(id));
    const { readyOrActive } = live.length
      ? await loops[0]!.engine.waiting(QUEUES.mailSync, live)
      : { readyOrActive: 0 };
    const syncing = loops.reduce((n, l) => n + l.inFlight, 0);
    if (readyOrActive === 0 && syncing === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `${what}: the worker loop did not go idle (${readyOrActive} jobs ready or running, ${syncing} syncs)`,
      );
    for (const l of loops) l.wake();
    await sleep(5);
  }
}

/** Time passes until the first deferred job of these accounts is due (retry backoff, busy, quota, history lag); the ms moved (0: none waits). */
export async function untilDue(loops: ModelLoop[], time: ModelTime, accountIds: string[]): Promise<number> {
  if (!accountIds.length) return 0;
  const { nextDueMs } = await loops[0]!.engine.waiting(QUEUES.mailSync, accountIds);
  if (nextDueMs === null) return 0;
  const ms = Math.max(1, nextDueMs);
  await time.advance(ms);
  for (const l of loops) l.wake();
  return ms;
}
