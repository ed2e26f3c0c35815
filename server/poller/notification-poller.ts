/**
 * The Pub/Sub pull loop hosted in the Koa process. Each round pulls a bounded batch,
 * groups the notifications by account (notifications that arrive together coalesce into
 * one sync), and runs the shared sync service from the account's own checkpoint — the
 * payload only says which account changed. A message is acknowledged only after its sync
 * committed (or when it names no known account or cannot be decoded); failures are left
 * for redelivery with a growing delay, and give up after MAX_ATTEMPTS so a poison message
 * cannot loop forever (the safety sweep still covers that account).
 */
import { AppError } from '../domain/errors.ts';
import type { Logger } from '../logger.ts';
import type { NotificationQueue, ReceivedNotification } from '../providers/pubsub.ts';

export interface PollerSync {
  syncAccount(accountId: string, opts?: { maxMessages?: number }): Promise<{ hasMore: boolean; messagesSynced: number }>;
}

export interface PollerDeps {
  queue: NotificationQueue;
  sync: PollerSync;
  /** The account a notification's emailAddress names, or null when unknown/disconnected. */
  resolveAccount(emailAddress: string): Promise<string | null>;
  /** Records that the account's notifications are arriving (for the missed-notification sweep). */
  noteNotification(accountId: string): Promise<void>;
  log: Logger;
  batchSize?: number;
  /** Sync calls per account per round, so one huge mailbox cannot starve the others. */
  roundsPerAccount?: number;
  idleDelayMs?: number;
  maxAttempts?: number;
}

export const MAX_ATTEMPTS = 8;

export function backoffSeconds(attempt: number): number {
  return Math.min(600, 5 * 2 ** Math.max(0, attempt - 1));
}

function decode(n: ReceivedNotification): string | null {
  try {
    const body = JSON.parse(n.data.toString('utf8')) as { emailAddress?: unknown };
    return typeof body.emailAddress === 'string' && body.emailAddress.length <= 320 ? body.emailAddress.toLowerCase() : null;
  } catch {
    return null;
  }
}

export function createNotificationPoller(deps: PollerDeps) {
  const batchSize = deps.batchSize ?? 100;
  const rounds = deps.roundsPerAccount ?? 4;
  const idleDelayMs = deps.idleDelayMs ?? 1_000;
  const maxAttempts = deps.maxAttempts ?? MAX_ATTEMPTS;
  const log = deps.log.child({ component: 'poller' });
  /** Accounts left with more to sync after their bounded share of a round. */
  const unfinished = new Set<string>();
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  /** Syncs one account up to `rounds` times; true when it committed (drained or bounded). */
  async function drain(accountId: string): Promise<void> {
    for (let i = 0; i < rounds; i++) {
      const { hasMore } = await deps.sync.syncAccount(accountId);
      if (!hasMore) {
        unfinished.delete(accountId);
        return;
      }
    }
    unfinished.add(accountId);
  }

  async function handleGroup(accountId: string, messages: ReceivedNotification[]) {
    const ackIds = messages.map((m) => m.ackId);
    const attempt = Math.max(...messages.map((m) => m.deliveryAttempt || 1));
    try {
      await deps.noteNotification(accountId);
      await drain(accountId);
      await deps.queue.ack(ackIds);
    } catch (err) {
      const code = err instanceof AppError ? err.code : 'INTERNAL_ERROR';
      if (code === 'TOKEN_EXPIRED' || attempt >= maxAttempts) {
        // Retrying cannot help (the user must reconnect) or has not helped: drop the message.
        log.warn({ accountId, code, attempt }, 'notification dropped after sync failure');
        await deps.queue.ack(ackIds);
        return;
      }
      const delay = err instanceof AppError && err.retryAfter ? Math.max(err.retryAfter, 1) : backoffSeconds(attempt);
      log.warn({ accountId, code, attempt, retryInSeconds: delay }, 'sync for notification failed; will be redelivered');
      await deps.queue.retryLater(ackIds, delay);
    }
  }

  async function runOnce(): Promise<number> {
    const messages = await deps.queue.pull(batchSize);
    const byEmail = new Map<string, ReceivedNotification[]>();
    const drop: string[] = [];
    for (const m of messages) {
      const email = decode(m);
      if (!email) {
        drop.push(m.ackId);
        continue;
      }
      byEmail.set(email, [...(byEmail.get(email) ?? []), m]);
    }
    if (drop.length) {
      log.warn({ count: drop.length }, 'undecodable notifications acknowledged and dropped');
      await deps.queue.ack(drop);
    }
    for (const [email, group] of byEmail) {
      const accountId = await deps.resolveAccount(email);
      if (!accountId) {
        await deps.queue.ack(group.map((m) => m.ackId));
        continue;
      }
      await handleGroup(accountId, group);
    }
    // Continue mailboxes that used up their share last round.
    for (const accountId of [...unfinished]) {
      if ([...byEmail.values()].length && messages.length >= batchSize) break;
      await drain(accountId).catch((err: unknown) => {
        unfinished.delete(accountId);
        log.warn({ accountId, code: err instanceof AppError ? err.code : 'INTERNAL_ERROR' }, 'continuing a drain failed');
      });
    }
    if (messages.length) log.info({ notifications: messages.length, accounts: byEmail.size }, 'notification batch handled');
    return messages.length + unfinished.size;
  }

  return {
    runOnce,
    start() {
      if (running) return;
      running = true;
      let failures = 0;
      loop = (async () => {
        while (running) {
          try {
            const handled = await runOnce();
            failures = 0;
            if (!handled && running) await sleep(idleDelayMs);
          } catch (err) {
            failures++;
            const ms = Math.min(30_000, 500 * 2 ** Math.min(failures, 6));
            log.warn({ err: (err as Error).message, code: (err as { code?: unknown }).code, retryInMs: ms }, 'notification pull failed');
            if (running) await sleep(ms);
          }
        }
      })();
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
      loop = undefined;
      await deps.queue.close().catch(() => undefined);
    },
  };
}
export type NotificationPoller = ReturnType<typeof createNotificationPoller>;
