/**
 * The job engine's queues: their names, options (policy, retries, retention) and schedules
 * (engine.ts creates them and is the only code that reads pg-boss's tables).
 */
import type { Queue } from 'pg-boss';

export const QUEUES = {
  mailSync: 'mail-sync',
  mailSyncDeadLetter: 'mail-sync-dead-letter',
  watchRenewal: 'watch-renewal',
  quietSweep: 'quiet-sweep',
  purgeExpired: 'purge-expired',
  autoTriage: 'auto-triage',
} as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** Retries of a mail-sync job before it is dead-lettered (exponential backoff from 5 s, at most 10 min apart: ~45 min in all). */
export const MAIL_SYNC_RETRY_LIMIT = 10;

export const queueOptions = (retry: MailSyncRetry): Record<QueueName, Omit<Queue, 'name'>> => ({
  [QUEUES.mailSyncDeadLetter]: { policy: 'standard', retentionSeconds: 30 * 86400, deleteAfterSeconds: 30 * 86400 },
  [QUEUES.mailSync]: {
    policy: 'stately',
    notify: true,
    retryLimit: retry.limit,
    retryDelay: retry.delaySeconds,
    retryBackoff: true,
    retryDelayMax: 600,
    expireInSeconds: 900,
    heartbeatSeconds: 10,
    deleteAfterSeconds: 3600,
    deadLetter: QUEUES.mailSyncDeadLetter,
  },
  [QUEUES.autoTriage]: {
    policy: 'stately',
    notify: true,
    retryLimit: 3,
    retryDelay: 30,
    retryBackoff: true,
    expireInSeconds: 900,
    heartbeatSeconds: 30,
    deleteAfterSeconds: 3600,
  },
  [QUEUES.watchRenewal]: {
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 60,
    expireInSeconds: 1800,
    deleteAfterSeconds: 86400,
  },
  [QUEUES.quietSweep]: {
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 60,
    expireInSeconds: 1800,
    deleteAfterSeconds: 86400,
  },
  [QUEUES.purgeExpired]: {
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 60,
    expireInSeconds: 600,
    deleteAfterSeconds: 86400,
  },
});

/** How a failing mail-sync job is retried before it is dead-lettered. */
export interface MailSyncRetry {
  limit: number;
  /** The first delay; it doubles (with jitter) up to 10 minutes. */
  delaySeconds: number;
}

/** When each scheduled job runs (cron, UTC). */
export const SCHEDULES: Partial<Record<QueueName, string>> = {
  [QUEUES.watchRenewal]: '*/10 * * * *',
  [QUEUES.quietSweep]: '*/10 * * * *',
  [QUEUES.purgeExpired]: '17 * * * *',
};
