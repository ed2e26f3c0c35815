/**
 * The production worker loop, as the accounts model (accounts-model.test.ts) drives it: the
 * real `mail-sync` worker started on the engine (pg-boss `work`: its polling, batches, per-job
 * settlement, heartbeats, stop), on a sync service whose provider client records which account
 * each call was for and can be interrupted:
 *  - `crashAfterCommit(account)`: the account's next job commits its sync, then its process
 *    "dies": the handler never returns, its job stays active with its heartbeat going stale,
 *    until `recoverCrashes` lets the engine's supervisor fail it by heartbeat (a retry), then
 *    lets the dead handler return late (its settle is fenced to the old attempt: a no-op);
 *  - `readHook`: run once after the next history or inbox read (the mailbox changing mid-sync).
 * Time passes only where the schedule says (`due` brings deferred jobs forward).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../../server/domain/errors.ts';
import { createSyncService, type SyncOutcome } from '../../../server/domain/mail/sync/sync.service.ts';
import { QUEUES } from '../../../server/jobs/engine.ts';
import { createMailSyncWorker } from '../../../server/jobs/mail-sync.job.ts';
import type { Logger } from '../../../server/infra/logger.ts';
import type { GmailApi, GmailFactory } from '../../../server/providers/gmail.ts';
import type { TestApp } from '../../helpers/app.ts';

export interface ModelLoop {
  /** Provider calls made for each account (ms timestamps). */
  readonly calls: Map<string, number[]>;
  /** Errors a sync or a user's action must never give: anything but the service's own (a deadlock, a bug). */
  readonly internalErrors: string[];
  readHook: (() => Promise<void>) | null;
  /** The route's sync (POST /api/mail/sync): same service, same page size. */
  routeSync(accountId: string, opts?: { fullResync?: boolean }): Promise<SyncOutcome | undefined>;
  crashAfterCommit(accountId: string): void;
  /** Accounts whose job is stuck in a dead handler. */
  crashedAccounts(): Set<string>;
  recoverCrashes(): Promise<number>;
  /** Deferred jobs of these accounts (retry backoff, busy, quota, history lag) come due now; how many. */
  due(accountIds: string[]): Promise<number>;
  /** Until no job of these accounts is ready or running (crashed ones aside) and no sync runs. */
  idle(accountIds: string[], what: string): Promise<void>;
  /** Sync calls started so far (a settled world makes none). */
  readonly syncsRun: number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createModelLoop(deps: { app: TestApp; realGmail: GmailFactory; page: number; callsPerJob: number; log: Logger; idleTimeoutMs?: number }): ModelLoop {
  const { app } = deps;
  const engine = app.container.liveInbox.engine;
  const sql = <T>(q: string, params: unknown[]) => app.container.orm.em.fork().execute(q, params) as Promise<T[]>;
  const calls = new Map<string, number[]>();
  const internalErrors: string[] = [];
  const crashNext = new Set<string>();
  const crashed: { accountId: string; release: () => void }[] = [];
  let inFlight = 0;
  let syncsRun = 0;

  const gmail: GmailFactory = (auth, quota) => {
    const api = deps.realGmail(auth, quota);
    const accountId = quota?.accountId;
    const note = () => {
      if (!accountId) return;
      const list = calls.get(accountId) ?? [];
      list.push(Date.now());
      calls.set(accountId, list);
    };
    const fire = async () => {
      const h = loop.readHook;
      loop.readHook = null;
      if (h) await h();
    };
    const wrapped: GmailApi = {
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
    };
    return wrapped;
  };
  const sync = createSyncService({ orm: app.container.orm, gmail, credentials: app.container.credentials, log: deps.log });
  const internal = (err: unknown) => !(err instanceof AppError) || err.code === 'INTERNAL_ERROR';
  const run = async (accountId: string, opts: { fullResync?: boolean }) => {
    inFlight++;
    syncsRun++;
    try {
      return await sync.syncAccount(accountId, { ...opts, maxMessages: deps.page });
    } catch (err) {
      if (internal(err)) internalErrors.push(`sync of ${accountId}: ${String((err as Error).stack ?? err)}`);
      throw err;
    } finally {
      inFlight--;
    }
  };
  const worker = createMailSyncWorker({
    orm: app.container.orm,
    engine,
    log: deps.log,
    callsPerJob: deps.callsPerJob,
    historyLag: { firstSeconds: 1, windowSeconds: 4 },
    concurrency: { workers: 2, batch: 3 },
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

  const loop: ModelLoop = {
    calls,
    internalErrors,
    readHook: null,
    get syncsRun() {
      return syncsRun;
    },
    routeSync: (accountId, opts = {}) => run(accountId, opts).catch(() => undefined),
    crashAfterCommit: (accountId) => void crashNext.add(accountId),
    crashedAccounts: () => new Set(crashed.map((c) => c.accountId)),
    async recoverCrashes() {
      const dead = crashed.splice(0);
      if (!dead.length) return 0;
      await sql(`update pgboss.job set heartbeat_on = now() - interval '1 hour' where name = ? and state = 'active' and singleton_key = any(array[?]::text[])`, [
        QUEUES.mailSync,
        dead.map((d) => d.accountId),
      ]);
      await engine.boss.supervise(QUEUES.mailSync);
      for (const d of dead) d.release();
      return dead.length;
    },
    async due(accountIds) {
      const moved = await sql(
        `update pgboss.job set start_after = now() where name = ? and state in ('created', 'retry') and start_after > now() and singleton_key = any(array[?]::text[]) returning id`,
        [QUEUES.mailSync, accountIds],
      );
      if (moved.length) wake();
      return moved.length;
    },
    async idle(accountIds, what) {
      const deadline = Date.now() + (deps.idleTimeoutMs ?? 60_000);
      for (;;) {
        const dead = loop.crashedAccounts();
        const live = accountIds.filter((id) => !dead.has(id));
        const [row] = !live.length ? [{ n: 0 }] : await sql<{ n: number }>(
          `select count(*)::int as n from pgboss.job where name = ? and singleton_key = any(array[?]::text[])
             and (state = 'active' or (state in ('created', 'retry') and start_after <= now()))`,
          [QUEUES.mailSync, live],
        );
        if (row!.n === 0 && inFlight === 0) return;
        if (Date.now() > deadline) throw new Error(`${what}: the worker loop did not go idle (${row!.n} jobs ready or running, ${inFlight} syncs)`);
        wake();
        await sleep(20);
      }
    },
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
