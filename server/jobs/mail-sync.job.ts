/**
 * The `mail-sync` worker: drives one account's inbox towards the provider's, a few bounded
 * sync calls per job (the same sync service and lease as POST /api/mail/sync), then queues
 * the account again behind the others if it has more, so a 10,000-message backfill never
 * starves anyone's fresh mail. Every sync starts from the stored checkpoint; the job's
 * payload only names the account.
 *
 * - The route (or another instance) holds the lease: try again in its Retry-After.
 * - Provider quota: wait the provider's Retry-After, without counting as a failure; our own
 *   pacing (providers/gmail-quota.ts) defers by exactly its wait, the daily budget to the next
 *   UTC day (the account's sync state says so).
 * - Disconnected, or the grant is gone: nothing to do until a reconnect enqueues again.
 * - Anything else fails the job: the engine retries with backoff; the account's row keeps the
 *   code and since when, and a job past its retries is dead-lettered visibly (dead-letter
 *   queue, `dead_lettered_at`, an error line). The quiet sweep asks again later.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { JobWithMetadata } from 'pg-boss';
import { AppError } from '../domain/errors.ts';
import { QuotaWait } from '../providers/gmail-quota.ts';
import { announceSync } from '../domain/events/announce.ts';
import {
  recordCaughtUp,
  recordQuotaWait,
  recordSyncFailure,
  recordSyncSuccess,
} from '../domain/mail/sync/states/index.ts';
import type { SyncService } from '../domain/mail/sync/sync.service.ts';
import { errorSummary, type Logger } from '../infra/logger.ts';
import type { Metrics } from '../infra/metrics.ts';
import { inSpan } from '../infra/trace-hooks.ts';
import { QUEUES, type JobEngine, type SyncRequest } from './engine.ts';

/** A quota answer's wait when the provider gives none shorter; doubled per quota answer in a row, up to the max. */
const QUOTA_BACKOFF_FIRST_SECONDS = 1;
const QUOTA_BACKOFF_MAX_SECONDS = 300;

/** Sync calls (≤ 50 messages each) a job makes before it looks whether other accounts wait. */
export const CALLS_PER_JOB = 4;
/** A job hands over after this long whatever waits (well inside the engine's 15-minute expiry). */
const MAX_JOB_MS = 5 * 60_000;
/**
 * Accounts synced at once by one instance (each sync mostly waits on the provider): WORKERS
 * engine workers taking up to BATCH jobs each. A worker whose fetch came back full fetches
 * again at once (a flood drains without waiting for the poll); one that came back short waits
 * for a NOTIFY or the next poll.
 */
export const WORKERS = 8;
export const BATCH = 8;

const codeOf = (err: unknown) => (err instanceof AppError ? err.code : 'INTERNAL_ERROR');

/**
 * The provider notifies before its history shows the change: a caught-up account whose
 * checkpoint is below the notified history id syncs again after `firstSeconds`, then after
 * as long again as has passed since the notification (2, 4, 8 … s), for `windowSeconds`.
 */
export const HISTORY_LAG = { firstSeconds: 2, windowSeconds: 120 };

export function createMailSyncWorker(deps: {
  orm: MikroORM;
  engine: JobEngine;
  sync: Pick<SyncService, 'syncAccount'>;
  log: Logger;
  metrics?: Pick<Metrics, 'syncJob'>;
  callsPerJob?: number;
  historyLag?: { firstSeconds: number; windowSeconds: number };
  /**
   * Engine workers and jobs per fetch (default WORKERS, BATCH; a test takes one worker to see a
   * batch), and how often an idle worker looks without being woken (default 2 s).
   */
  concurrency?: { workers: number; batch: number; pollSeconds?: number };
}) {
  const log = deps.log.child({ component: 'mail-sync-job' });
  const calls = deps.callsPerJob ?? CALLS_PER_JOB;
  const lag = deps.historyLag ?? HISTORY_LAG;
  /** Set at shutdown: jobs in flight commit the call they are in and queue the rest for whichever instance is up. */
  let stopping = false;

  async function connected(accountId: string): Promise<boolean> {
    const rows = (await deps.orm.em
      .getConnection()
      .execute(
        'select 1 from accounts a join credentials c on c.account_id = a.id where a.id = ? and not a.needs_reconnect',
        [accountId],
      )) as unknown[];
    return rows.length > 0;
  }

  const recordSuccess = (accountId: string) => recordSyncSuccess(deps.orm.em.getConnection(), accountId);

  async function recordFailure(job: JobWithMetadata<SyncRequest>, code: string, final: boolean) {
    await recordSyncFailure(deps.orm.em.getConnection(), job.data.accountId, code, final).catch(() => undefined);
    const line = { accountId: job.data.accountId, code, attempt: job.retryCount + 1, retryLimit: job.retryLimit };
    // The engine's own decision, read back: past the limit, or (a retry it could not queue) before it; the line says which.
    if (final && job.retryCount >= job.retryLimit)
      log.error(line, 'mail sync job dead-lettered after its retries; the quiet sweep will ask again');
    else if (final)
      log.error(
        line,
        'mail sync job dead-lettered before its retry limit: its retry could not be queued; the quiet sweep will ask again',
      );
    else log.warn(line, 'mail sync job failed; retrying with backoff');
  }

  /** Another account's sync job is ready to run, so this one should make way (the engine's `othersWaiting`). */
  const othersWaiting = (accountId: string) => deps.engine.othersWaiting(QUEUES.mailSync, accountId);

  /**
   * Settles one job the moment it ends (fenced to the attempt it was fetched as), not when the
   * slowest job of its batch does: a finished job never stays active, holding its account's
   * next job back. A failure's retry or dead letter is the engine's own decision: read back.
   */
  async function settle(
    job: JobWithMetadata<SyncRequest>,
    result: { status: 'completed'; outcome: string } | { status: 'failed'; code: string },
  ): Promise<void> {
    if (result.status === 'completed') {
      await deps.engine.boss.complete(QUEUES.mailSync, job, { outcome: result.outcome });
      return;
    }
    const failed = await deps.engine.boss.fail(QUEUES.mailSync, job, { code: result.code });
    // Fenced out: this attempt had lost its job (a stalled worker's, handed on by the supervisor), whose
    // own attempt records how it went; a failure recorded here would outlive the other's success.
    // (pg-boss 12.38 answers { affected } at run time; its CommandResponse type declares no field.)
    if ((failed as { affected?: number }).affected === 0)
      return void log.warn(
        { accountId: job.data.accountId, code: result.code, attempt: job.retryCount + 1 },
        'a job attempt that had lost its claim failed; its job was handed on',
      );
    const after = await deps.engine.boss.getJobById<SyncRequest>(QUEUES.mailSync, job.id).catch(() => null);
    await recordFailure(job, result.code, after ? after.state === 'failed' : job.retryCount >= job.retryLimit);
  }

  /**
   * One job: syncs `calls` times, then goes on while no other account waits (a lone backfill
   * runs at full speed), or queues the rest behind the others; returns why it stopped.
   */
  async function run(job: JobWithMetadata<SyncRequest>): Promise<string> {
    const { accountId } = job.data;
    if (!(await connected(accountId))) return 'disconnected';
    // Made while the account's last job ran, which then failed: its retry covers this one, which must not run beside it.
    if (job.retryCount === 0 && (await deps.engine.retryWaits(accountId))) return 'merged';
    const started = Date.now();
    for (let i = 0; ; i++) {
      if (i > 0 && i % calls === 0 && (Date.now() - started > MAX_JOB_MS || (await othersWaiting(accountId)))) break;
      let hasMore: boolean;
      try {
        ({ hasMore } = await deps.sync.syncAccount(accountId));
      } catch (err) {
        const code = codeOf(err);
        if (code === 'RATE_LIMITED') {
          await deps.engine.enqueueSync(
            { accountId, reason: 'busy' },
            { startAfterSeconds: (err as AppError).retryAfter ?? 5 },
          );
          return 'busy';
        }
        if (code === 'MAIL_RATE_LIMITED' && (err as AppError).cause instanceof QuotaWait) {
          // Our own pacing (the account's window, or bulk work at the daily budget): exactly its wait, no backoff.
          const wait = (err as AppError).cause as QuotaWait;
          if (wait.reason === 'daily') {
            const em = deps.orm.em.fork();
            await recordQuotaWait(em, accountId, wait.waitMs);
            await announceSync(em, accountId);
          }
          await deps.engine.enqueueSync(
            { accountId, reason: 'paced' },
            { startAfterSeconds: Math.max(1, wait.waitMs / 1000) },
          );
          return wait.reason === 'daily' ? 'daily-budget' : 'paced';
        }
        if (code === 'MAIL_RATE_LIMITED') {
          // The provider's Retry-After, and at least a wait that doubles with each quota answer in a row (1 s, 2 s, 4 s … 5 min).
          const streak = (job.data.reason === 'quota' ? (job.data.quotaStreak ?? 0) : 0) + 1;
          const wait = Math.max(
            (err as AppError).retryAfter ?? 0,
            Math.min(QUOTA_BACKOFF_MAX_SECONDS, QUOTA_BACKOFF_FIRST_SECONDS * 2 ** (streak - 1)),
          );
          await deps.engine.enqueueSync(
            { accountId, reason: 'quota', quotaStreak: streak },
            { startAfterSeconds: wait },
          );
          return 'quota';
        }
        // Disconnected or deleted while this sync ran: nothing to retry until a reconnect enqueues again.
        if (!(await connected(accountId).catch(() => true))) return 'disconnected';
        throw err;
      }
      if (!hasMore) {
        // The history ended before the point a notification named: it lags; look again soon, backing off.
        const ahead = await recordCaughtUp(deps.orm.em.getConnection(), accountId);
        if (ahead && ahead.notifiedAheadSeconds < lag.windowSeconds) {
          await deps.engine.enqueueSync(
            { accountId, reason: 'history-lag' },
            { startAfterSeconds: Math.max(lag.firstSeconds, ahead.notifiedAheadSeconds) },
          );
          return 'history-lag';
        }
        return 'caught-up';
      }
      // Shutting down (or the engine gave up on the job: fetch() hands out no signal): queue the rest.
      if (stopping || job.signal?.aborted) break;
    }
    await recordSuccess(accountId);
    await deps.engine.enqueueSync({ accountId, reason: 'continue' });
    return 'continued';
  }

  return {
    run,
    /** Jobs in flight stop after the sync call they are in (the engine's stop then waits for them). */
    stop() {
      stopping = true;
    },
    async start() {
      stopping = false;
      const options = {
        localConcurrency: deps.concurrency?.workers ?? WORKERS,
        batchSize: deps.concurrency?.batch ?? BATCH,
        burstWhenBatchFull: true,
        perJobResults: true,
        pollingIntervalSeconds: deps.concurrency?.pollSeconds ?? 2,
      } as const;
      await deps.engine.work<SyncRequest>(QUEUES.mailSync, options, (jobs) =>
        // Each job of a batch runs and settles on its own (a failure retries that job only).
        Promise.all(
          jobs.map(async (job) => {
            try {
              // When tracing runs: one span per job, linked to the span that queued it (job.data.trace).
              const outcome = await inSpan(
                'mail-sync job',
                {
                  'messaging.message.id': job.id,
                  'mail.sync.reason': job.data.reason,
                  'mail.sync.attempt': job.retryCount + 1,
                },
                () => run(job),
                { kind: 'consumer', linkTo: job.data.trace },
              );
              deps.metrics?.syncJob(outcome, outcome === 'quota' ? 'MAIL_RATE_LIMITED' : undefined);
              log.debug({ accountId: job.data.accountId, reason: job.data.reason, outcome }, 'mail sync job done');
              await settle(job, { status: 'completed', outcome }).catch((e: unknown) =>
                log.warn({ jobId: job.id, ...errorSummary(e) }, 'settling a sync job failed; the batch settles it'),
              );
              return { id: job.id, status: 'completed' as const };
            } catch (err) {
              deps.metrics?.syncJob('failed', codeOf(err));
              await settle(job, { status: 'failed', code: codeOf(err) }).catch((e: unknown) =>
                log.warn({ jobId: job.id, ...errorSummary(e) }, 'settling a sync job failed; the batch settles it'),
              );
              // Already settled above (the batch's settle of the same attempt is then a no-op).
              return { id: job.id, status: 'failed' as const, output: { code: codeOf(err) } };
            }
          }),
        ),
      );
    },
  };
}
