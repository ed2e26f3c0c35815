/**
 * Wires the live inbox: the mail watch, the job engine (pg-boss in the same PostgreSQL), the
 * `mail-sync` worker, the scheduled jobs and, when PUBSUB_SUBSCRIPTION is set, the
 * notification intake — all on the one sync service the route uses. Built once by the
 * container: the engine starts here (sign-in enqueues the first sync), the workers start with
 * the server and stop before the database closes.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from 'pg-boss';
import type { Config } from '../infra/config.ts';
import type { CredentialsService } from '../domain/auth/credentials.service.ts';
import { purgeExpired } from '../domain/auth/purge-expired.ts';
import type { SyncService } from '../domain/mail/sync/sync.service.ts';
import { createWatchService, type WatchService } from '../domain/mail/sync/watch.service.ts';
import { createNotificationIntake, notificationAccounts, type NotificationIntake } from '../intake/notifications.ts';
import { errorSummary, type Logger } from '../infra/logger.ts';
import type { Metrics } from '../infra/metrics.ts';
import type { GmailFactory } from '../providers/gmail.ts';
import { startJobEngine, type JobEngine, type MailSyncRetry } from './engine.ts';
import { createMailSyncWorker } from './mail-sync.job.ts';
import { createScheduledJobs } from './scheduled.ts';

export interface Worker {
  start(): void | Promise<void>;
  stop(): Promise<void>;
}

export interface LiveInboxOptions {
  /** Run the workers (default true). Off, jobs are stored and never run: route tests that want no background sync. */
  work?: boolean;
  /** How failing sync jobs are retried (tests shorten it). */
  retry?: MailSyncRetry;
  /** How long and how often a sync behind a notified history id looks again (tests shorten it). */
  historyLag?: { firstSeconds: number; windowSeconds: number };
  /** Sync workers and jobs per fetch (tests). */
  concurrency?: { workers: number; batch: number; pollSeconds?: number };
  /** The job engine's clock: pg-boss's timers and, a TestClock, its database time (tests move time by hand). */
  clock?: Clock;
}

export interface LiveInbox {
  watch: WatchService;
  engine: JobEngine;
  /** The scheduled jobs' handlers, to run one directly (tests, operators' scripts). */
  scheduled: ReturnType<typeof createScheduledJobs>['handlers'];
  intake?: NotificationIntake;
  workers: Worker[];
}

export async function createLiveInbox(deps: {
  config: Readonly<Config>;
  orm: MikroORM;
  databaseUrl: string;
  credentials: CredentialsService;
  gmail: GmailFactory;
  sync: SyncService;
  log: Logger;
  metrics?: Pick<Metrics, 'syncJob'>;
  options?: LiveInboxOptions;
}): Promise<LiveInbox> {
  const { config, orm, credentials, gmail, sync, log } = deps;
  const work = deps.options?.work ?? config.backgroundWorkers;
  const watch = createWatchService({
    orm,
    topic: config.pubsub.topic,
    log,
    api: {
      open: async (accountId) =>
        gmail(await credentials.client(orm.em.fork(), accountId), { accountId, purpose: 'watch' }),
    },
  });
  const engine = await startJobEngine({
    databaseUrl: deps.databaseUrl,
    log,
    schedule: config.oauth.configured,
    retry: deps.options?.retry,
    superviseSeconds: config.jobSuperviseSeconds,
    clock: deps.options?.clock,
  });
  const syncWorker = createMailSyncWorker({
    orm,
    engine,
    sync,
    log,
    metrics: deps.metrics,
    historyLag: deps.options?.historyLag,
    concurrency: deps.options?.concurrency,
  });
  const scheduled = createScheduledJobs({ orm, engine, watch, purge: () => purgeExpired(orm.em.fork()), log });

  // The Pub/Sub client (gRPC, protobufs: ~27 MiB resident) is loaded only where a subscription is read.
  const pubsub = config.pubsub.subscription ? await import('../providers/pubsub.ts') : undefined;
  const intake = pubsub
    ? createNotificationIntake({
        queue: pubsub.createNotificationQueue(config),
        engine,
        log,
        ...notificationAccounts(orm),
      })
    : undefined;

  // Stopped in reverse: the intake first, then the engine (its running jobs finish and commit).
  const workers: Worker[] = [{ start: () => undefined, stop: () => engine.stop() }];
  if (work) {
    workers.push({
      async start() {
        await syncWorker.start();
        if (config.oauth.configured) await scheduled.start();
      },
      stop: async () => syncWorker.stop(),
    });
  }
  if (pubsub && intake && work) {
    workers.push({
      start() {
        // Local emulator convenience; an unreachable queue must never block the HTTP server.
        pubsub
          .ensureEmulatorSubscription(config)
          .catch((err: unknown) => log.warn(errorSummary(err), 'could not prepare the emulator subscription'));
        intake.start();
      },
      stop: () => intake.stop(),
    });
  }
  return { watch, engine, scheduled: scheduled.handlers, intake, workers };
}
