/**
 * Wires the live inbox: the mail watch over the Gmail provider, the Pub/Sub poller and the
 * periodic maintenance (watch renewal + safety sweep), all on the one sync service. Built
 * once by the container; returns the workers to start with the server.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import type { CredentialsService } from '../domain/auth/credentials.service.ts';
import { purgeExpired } from '../domain/auth/purge-expired.ts';
import type { SyncService } from '../domain/mail/sync.service.ts';
import { createWatchService, type WatchService } from '../domain/mail/watch.service.ts';
import { errorSummary, type Logger } from '../logger.ts';
import type { GmailFactory } from '../providers/gmail.ts';
import { createMaintenance } from './maintenance.ts';
import { createNotificationPoller, type NotifiedAccount } from './notification-poller.ts';

/** Calls a full resync may take before the sweep moves on (50 messages each). */
export const FULL_RESYNC_MAX_CALLS = 40;

/** A full resync driven to its end (bounded): the first call restarts the listing, the next ones continue it. */
export function fullResyncWith(sync: SyncService) {
  return async (accountId: string) => {
    let outcome = await sync.syncAccount(accountId, { fullResync: true });
    for (let i = 1; outcome.hasMore && i < FULL_RESYNC_MAX_CALLS; i++) outcome = await sync.syncAccount(accountId);
    return outcome;
  };
}

/** How the poller finds a notification's account and records that notifications arrive. */
export function notificationAccounts(orm: MikroORM) {
  return {
    async resolveAccount(emailAddress: string): Promise<NotifiedAccount | null> {
      const rows = (await orm.em.getConnection().execute(
        `select a.id, s.history_id::text as history_id, coalesce(s.full_sync_active, false) as full_sync_active
           from accounts a join credentials c on c.account_id = a.id left join sync_states s on s.account_id = a.id
          where lower(a.email) = ? and not a.needs_reconnect order by a.updated_at desc limit 1`,
        [emailAddress.toLowerCase()],
      )) as { id: string; history_id: string | null; full_sync_active: boolean }[];
      const row = rows[0];
      if (!row) return null;
      // During a listing the checkpoint is where the listing started, not how far the store is complete.
      return { id: row.id, syncedThrough: row.full_sync_active ? null : row.history_id };
    },
    async noteNotification(accountId: string): Promise<void> {
      await orm.em.getConnection().execute('update sync_states set last_notification_at = now() where account_id = ?', [accountId]);
    },
  };
}

export interface Worker {
  start(): void;
  stop(): Promise<void>;
}

export interface LiveInbox {
  watch: WatchService;
  /** Exposed so tests can drive a round directly. */
  maintenance?: { runOnce(): Promise<unknown> };
  poller?: { runOnce(): Promise<number> };
  workers: Worker[];
}

export async function createLiveInbox(deps: { config: Readonly<Config>; orm: MikroORM; credentials: CredentialsService; gmail: GmailFactory; sync: SyncService; log: Logger }): Promise<LiveInbox> {
  const { config, orm, credentials, gmail, sync, log } = deps;
  const apiFor = async (accountId: string) => gmail(await credentials.client(orm.em.fork(), accountId));
  const watch = createWatchService({
    orm,
    topic: config.pubsub.topic,
    log,
    api: {
      watch: async (accountId, topicName) => (await apiFor(accountId)).watch({ topicName, labelIds: ['INBOX'] }),
      stop: async (accountId) => (await apiFor(accountId)).stop(),
    },
  });
  const workers: Worker[] = [];

  const purge = () => purgeExpired(orm.em.fork());
  const maintenance = config.oauth.configured ? createMaintenance({ orm, watch, sync: { fullResync: fullResyncWith(sync) }, purge, log }) : undefined;
  if (maintenance) workers.push(maintenance);

  // The Pub/Sub client (gRPC, protobufs: ~27 MiB resident) is loaded only where a subscription is read.
  const pubsub = config.pubsub.subscription ? await import('../providers/pubsub.ts') : undefined;
  const poller = pubsub ? createNotificationPoller({ queue: pubsub.createNotificationQueue(config), sync, log, ...notificationAccounts(orm) }) : undefined;
  if (pubsub && poller) {
    workers.push({
      start() {
        // Local emulator convenience; an unreachable queue must never block the HTTP server.
        pubsub.ensureEmulatorSubscription(config).catch((err: unknown) => log.warn(errorSummary(err), 'could not prepare the emulator subscription'));
        poller.start();
      },
      stop: () => poller.stop(),
    });
  }
  return { watch, maintenance, poller, workers };
}
