/** What the notification poller is given: its queue, the sync, the account lookup, and its tuning. */
import type { Logger } from '../logger.ts';
import type { NotificationQueue } from '../providers/pubsub.ts';

export interface PollerSync {
  syncAccount(accountId: string, opts?: { maxMessages?: number }): Promise<{ hasMore: boolean; messagesSynced: number }>;
}

export interface NotifiedAccount {
  id: string;
  /** The history id up to which the stored copy is complete (null: never synced, or a listing is in progress). */
  syncedThrough: string | null;
}

export interface PollerDeps {
  queue: NotificationQueue;
  sync: PollerSync;
  /** The account a notification's emailAddress names, or null when unknown/disconnected. */
  resolveAccount(emailAddress: string): Promise<NotifiedAccount | null>;
  /** Records that the account's notifications are arriving (for the missed-notification sweep). */
  noteNotification(accountId: string): Promise<void>;
  log: Logger;
  batchSize?: number;
  /** Accounts of a batch synced at the same time. */
  concurrency?: number;
  /** Sync calls per account per round, so one huge mailbox cannot starve the others. */
  roundsPerAccount?: number;
  idleDelayMs?: number;
  maxAttempts?: number;
  /** Seconds a pulled batch is kept from redelivery while it is worked on (renewed between accounts). */
  processingDeadlineSeconds?: number;
  /** Seconds before a failed message is redelivered, by failure count (default backoffSeconds). */
  backoff?: (attempt: number) => number;
  /** Seconds before retrying while another sync holds the account (default: the sync's Retry-After). */
  busyDelaySeconds?: number;
  /** Epoch ms; injectable for tests. */
  clock?: () => number;
}
