/**
 * What happens to the notifications of a failed sync. Failures are counted here, per
 * message (this instance's view): the real service reports a delivery attempt only with a
 * dead-letter policy, and it would count the deliveries refused because another sync of
 * the account was running, which are not failures. A lost grant drops them (the user must
 * reconnect); a busy account defers them; otherwise they come back with backoff, and are
 * dropped after `maxAttempts` failed syncs so a poison message cannot loop forever.
 */
import { AppError } from '../domain/errors.ts';
import type { Logger } from '../logger.ts';
import type { NotificationQueue, ReceivedNotification } from '../providers/pubsub.ts';
import { codeOf, isBusy } from './notification-message.ts';

/** Messages whose failures are remembered (oldest forgotten first). */
const MAX_TRACKED = 10_000;

export function createFailureSettler(deps: {
  queue: NotificationQueue;
  log: Logger;
  maxAttempts: number;
  backoff: (attempt: number) => number;
  busyDelay: (err: unknown) => number;
}) {
  const { queue, log, maxAttempts, backoff, busyDelay } = deps;
  /** Failed syncs per message id. */
  const failures = new Map<string, number>();

  function countFailure(messageId: string): number {
    const n = (failures.get(messageId) ?? 0) + 1;
    failures.delete(messageId);
    failures.set(messageId, n);
    if (failures.size > MAX_TRACKED) failures.delete(failures.keys().next().value!);
    return n;
  }

  async function settle(accountId: string, messages: ReceivedNotification[], err: unknown) {
    const code = codeOf(err);
    if (code === 'TOKEN_EXPIRED') {
      // Retrying cannot help: the user must reconnect.
      log.warn({ accountId, code }, 'notification dropped: the account needs reconnection');
      for (const m of messages) failures.delete(m.messageId);
      await queue.ack(messages.map((m) => m.ackId));
      return;
    }
    if (isBusy(err)) {
      const delay = busyDelay(err);
      log.info({ accountId, retryInSeconds: delay }, 'a sync of the account is running; notification deferred');
      await queue.retryLater(messages.map((m) => m.ackId), delay);
      return;
    }
    const drop: string[] = [];
    const later = new Map<number, string[]>();
    for (const m of messages) {
      const attempt = countFailure(m.messageId);
      if (attempt >= maxAttempts) {
        failures.delete(m.messageId);
        drop.push(m.ackId);
        continue;
      }
      const delay = err instanceof AppError && err.retryAfter ? Math.max(err.retryAfter, 1) : backoff(attempt);
      later.set(delay, [...(later.get(delay) ?? []), m.ackId]);
    }
    if (drop.length) {
      log.warn({ accountId, code, notifications: drop.length }, 'notification dropped after repeated sync failures');
      await queue.ack(drop);
    }
    for (const [delay, ackIds] of later) {
      log.warn({ accountId, code, retryInSeconds: delay }, 'sync for notification failed; will be redelivered');
      await queue.retryLater(ackIds, delay);
    }
  }

  return { settle, forget: (messageId: string) => void failures.delete(messageId) };
}
