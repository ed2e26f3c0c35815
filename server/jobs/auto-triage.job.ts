/**
 * The `auto-triage` worker: analysis on arrival (domain/ai/auto-triage.ts), one job per
 * account at a time (the queue's `stately` policy, keyed by account). A job analyses at most
 * PER_PASS threads, one after another, then queues the account again behind the others if
 * more qualify: accounts take turns, and the AI calls in flight are bounded by the workers
 * (WORKERS per instance, one call each), whatever the number of accounts or arrivals.
 *
 * Stored mail (the sync service's `onStored`) and the setting turned on ask for a pass
 * (`nudge`). A pass that must wait (the account's budget share until the next UTC day, the
 * AI's or the mail's rate limit, a failed message's retry) queues its account again after
 * that wait; new mail covered by such a waiting job brings it forward only when the wait is
 * a message's retry: a spent share or a rate limit holds for new mail too.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { JobWithMetadata } from 'pg-boss';
import type { AutoTriage, PassEnd } from '../domain/ai/auto-triage.ts';
import { errorSummary, type Logger } from '../infra/logger.ts';
import type { Metrics } from '../infra/metrics.ts';
import { QUEUES, type JobEngine } from './engine.ts';

export interface TriageRequest {
  accountId: string;
  /** Why the pass was asked for: the job that waits carries why it waits. */
  reason: 'arrival' | 'setting' | 'more' | 'retry' | 'budget' | 'rate-limited';
}

/** Engine workers per instance: the AI calls analysis on arrival makes at once, per instance. */
export const WORKERS = 2;
/** Threads one job analyses before its account goes behind the others. */
export const PER_PASS = 5;

function next(end: PassEnd): { reason: TriageRequest['reason']; afterSeconds?: number } | null {
  if (end.kind === 'more') return { reason: 'more' };
  if (end.kind !== 'wait') return null;
  const reason = end.reason === 'retry' ? 'retry' : end.reason === 'AI_BUDGET_EXCEEDED' ? 'budget' : 'rate-limited';
  return { reason, afterSeconds: Math.max(1, end.afterMs / 1000) };
}

export function createAutoTriageWorker(deps: {
  orm: MikroORM;
  engine: JobEngine;
  triage: AutoTriage;
  log: Logger;
  metrics?: Pick<Metrics, 'autoTriage'>;
  /** Workers and threads per job (tests). */
  concurrency?: { workers?: number; perPass?: number; pollSeconds?: number };
}) {
  const log = deps.log.child({ component: 'auto-triage-job' });
  const perPass = deps.concurrency?.perPass ?? PER_PASS;

  async function run(job: JobWithMetadata<TriageRequest>): Promise<string> {
    const { accountId } = job.data;
    const end = await deps.triage.pass(accountId, perPass);
    const then = next(end);
    if (then)
      await deps.engine.enqueue(
        QUEUES.autoTriage,
        { accountId, reason: then.reason },
        { singletonKey: accountId, startAfterSeconds: then.afterSeconds },
      );
    const outcome = then?.reason ?? (end.kind === 'stop' ? 'stopped' : 'done');
    deps.metrics?.autoTriage(outcome, end.analysed);
    log.debug({ accountId, reason: job.data.reason, outcome, analysed: end.analysed }, 'auto-triage job done');
    return outcome;
  }

  return {
    run,
    /**
     * Asks for a pass over the account when its setting is on; true when one was queued or a
     * waiting retry brought forward. One statement when the setting is off.
     */
    async nudge(accountId: string, reason: 'arrival' | 'setting' = 'arrival'): Promise<boolean> {
      const conn = deps.orm.em.getConnection();
      const [row] = await conn.execute<{ on: boolean }[]>('select auto_triage as on from accounts where id = ?', [
        accountId,
      ]);
      if (!row?.on) return false;
      if (await deps.engine.enqueue(QUEUES.autoTriage, { accountId, reason }, { singletonKey: accountId })) return true;
      // The waiting job is brought forward only when it waits for a message's retry (a spent share or a rate limit holds).
      return deps.engine.bringForward(QUEUES.autoTriage, accountId, 'retry');
    },
    async start() {
      // While jobs are ready (pg-boss's cached queue statistics), a worker that found one looks again at once: a
      // backlog of short passes runs back to back, not one per poll (burstWhenBatchFull does nothing at batch 1).
      const options = {
        localConcurrency: deps.concurrency?.workers ?? WORKERS,
        batchSize: 1,
        burstWhenReadyExceeds: 1,
        pollingIntervalSeconds: deps.concurrency?.pollSeconds ?? 2,
      } as const;
      await deps.engine.work<TriageRequest>(QUEUES.autoTriage, options, async (jobs) => {
        for (const job of jobs) {
          try {
            await run(job);
          } catch (err) {
            // The engine retries the job with backoff; the line says which account and why.
            log.warn(
              { accountId: job.data.accountId, attempt: job.retryCount + 1, ...errorSummary(err) },
              'auto-triage job failed; retrying with backoff',
            );
            throw err;
          }
        }
      });
    },
  };
}
export type AutoTriageWorker = ReturnType<typeof createAutoTriageWorker>;
