/**
 * The notification intake: pulls the mail provider's change notifications from the Pub/Sub
 * subscription and turns each mailbox they name into a durable `mail-sync` job, then
 * acknowledges them. No sync runs here and nothing is held: once the job is stored (or one
 * is already waiting for the account, which covers the change) the notification has done
 * its work. If storing fails the notifications go back to the subscription with a delay.
 *
 * Dropped with an ack: undecodable payloads, mailboxes of no connected account, and
 * notifications whose history id the account's committed checkpoint already covers (an
 * earlier sync took their change along).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { noteNotification, resolveNotifiedAccount, type NotifiedAccount } from '../domain/mail/sync/states/index.ts';
import type { JobEngine } from '../jobs/engine.ts';
import { errorSummary, type Logger } from '../infra/logger.ts';
import { inSpan } from '../infra/trace-hooks.ts';
import type { NotificationQueue, ReceivedNotification } from '../providers/pubsub.ts';
import { covered, groupByMailbox } from './notification-message.ts';

/** How the intake finds a notification's account, and records that its notifications arrive (for the quiet sweep). */
export function notificationAccounts(orm: MikroORM) {
  const db = () => orm.em.getConnection();
  return {
    resolveAccount: (emailAddress: string): Promise<NotifiedAccount | null> =>
      resolveNotifiedAccount(db(), emailAddress),
    noteNotification: (accountId: string, historyId: bigint | null): Promise<void> =>
      noteNotification(db(), accountId, historyId),
  };
}

export interface IntakeDeps extends ReturnType<typeof notificationAccounts> {
  queue: NotificationQueue;
  engine: Pick<JobEngine, 'enqueueSync'>;
  log: Logger;
  batchSize?: number;
  idleDelayMs?: number;
  /** Seconds before notifications whose job could not be stored come back. */
  retryDelaySeconds?: number;
}

export function createNotificationIntake(deps: IntakeDeps) {
  const batchSize = deps.batchSize ?? 500;
  const idleDelayMs = deps.idleDelayMs ?? 1_000;
  const log = deps.log.child({ component: 'intake' });
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

  /** One mailbox's notifications: a sync job stored (or one already waiting), unless nothing is to be done; throws when it cannot be stored. */
  async function intake(email: string, group: { historyId: bigint | null }[]): Promise<void> {
    const account = await deps.resolveAccount(email);
    if (!account) return;
    // A point the checkpoint already passed costs no sync at all, and leaves the account's state as it was
    // (noted, it would say "catching up" until the next sync: a redelivery or a change read by an earlier sync).
    if (covered(group, account.syncedThrough)) return;
    const target = group.reduce<bigint | null>(
      (max, d) => (d.historyId !== null && (max === null || d.historyId > max) ? d.historyId : max),
      null,
    );
    await deps.noteNotification(account.id, target);
    await deps.engine.enqueueSync({ accountId: account.id, reason: 'notification' });
  }

  async function runOnce(): Promise<number> {
    const messages = await deps.queue.pull(batchSize);
    if (!messages.length) return 0;
    // When tracing runs, a batch is one span: the jobs it stores carry it (the sync jobs link to it).
    return inSpan(
      'mail notifications',
      { 'messaging.system': 'gcp_pubsub', 'messaging.batch.message_count': messages.length },
      () => takeIn(messages),
      { kind: 'consumer' },
    );
  }

  /** A pulled batch: its mailboxes' jobs stored, then the batch acknowledged (or handed back). */
  async function takeIn(messages: ReceivedNotification[]): Promise<number> {
    const { byEmail, undecodable } = groupByMailbox(messages);
    const ack: string[] = [...undecodable];
    const back: ReceivedNotification[] = [];
    let queued = 0;
    await Promise.all(
      [...byEmail].map(async ([email, group]) => {
        try {
          await intake(email, group);
          ack.push(...group.map((g) => g.message.ackId));
          queued++;
        } catch (err) {
          log.warn({ ...errorSummary(err) }, 'could not store a sync job for a notification; it comes back later');
          back.push(...group.map((g) => g.message));
        }
      }),
    );
    if (undecodable.length)
      log.warn({ count: undecodable.length }, 'undecodable notifications acknowledged and dropped');
    // An ack that fails is harmless: the redelivered copy finds a job waiting, or the checkpoint covering it.
    if (ack.length)
      await deps.queue
        .ack(ack)
        .catch((err: unknown) =>
          log.warn(errorSummary(err), 'acknowledging notifications failed; they will come again'),
        );
    if (back.length)
      await deps.queue
        .retryLater(
          back.map((m) => m.ackId),
          deps.retryDelaySeconds ?? 5,
        )
        .catch(() => undefined);
    log.info(
      { notifications: messages.length, accounts: byEmail.size, handedBack: back.length, mailboxes: queued },
      'notification batch taken in',
    );
    return messages.length;
  }

  return {
    runOnce,
    start() {
      if (running) return;
      running = true;
      let failuresInARow = 0;
      loop = (async () => {
        while (running) {
          try {
            const handled = await runOnce();
            failuresInARow = 0;
            if (!handled && running) await sleep(idleDelayMs);
          } catch (err) {
            failuresInARow++;
            const ms = Math.min(30_000, 500 * 2 ** Math.min(failuresInARow, 6));
            log.warn(
              { ...errorSummary(err), code: (err as { code?: unknown }).code, retryInMs: ms },
              'notification pull failed',
            );
            if (running) await sleep(ms);
          }
        }
      })();
    },
    /** Stops pulling; a batch in flight finishes (its jobs stored, its notifications acknowledged). */
    async stop() {
      running = false;
      wake?.();
      await loop;
      loop = undefined;
      await deps.queue.close().catch(() => undefined);
    },
  };
}
export type NotificationIntake = ReturnType<typeof createNotificationIntake>;
