/**
 * The Pub/Sub pull loop hosted in the Koa process. Each round pulls a bounded batch,
 * groups the notifications by account (notifications that arrive together coalesce into
 * one sync), and runs the shared sync service from the account's own checkpoint — the
 * payload only says which account changed, and up to which history id. Notifications the
 * stored copy already covers (their history id is not above the account's committed
 * checkpoint: an earlier sync took their change along) are acknowledged without a sync, so a
 * burst of notifications for one mailbox costs one sync, not one each. The accounts of a
 * batch sync concurrently (bounded), since each sync mostly waits on the provider.
 * A message is acknowledged only after its sync committed (or when it names no known
 * account, cannot be decoded, or is covered); failures are left
 * for redelivery with a growing delay, and give up after MAX_ATTEMPTS failed syncs so a
 * poison message cannot loop forever (the safety sweep still covers that account).
 *
 * Failures are counted per message (notification-failures.ts).
 *
 * A mailbox with more work than its bounded share of a round is continued in the next
 * rounds, and its notifications stay unacknowledged (their lease kept alive) until it is
 * drained: if this instance stops they are handed back, if it dies they come back when the
 * lease lapses, and another instance carries on from the checkpoint. A failed continuation
 * hands them back for redelivery with backoff, like any failed sync.
 *
 * A pulled batch is kept leased while it is worked on (the subscription's ack deadline may be
 * shorter than its syncs). Stopping lets the sync in flight commit, starts nothing new, and
 * hands every notification not yet done straight back to the subscription.
 */
import type { AppError } from '../domain/errors.ts';
import { errorSummary } from '../logger.ts';
import type { ReceivedNotification } from '../providers/pubsub.ts';
import { createFailureSettler } from './notification-failures.ts';
import { backoffSeconds, codeOf, covered, groupByMailbox, MAX_ATTEMPTS } from './notification-message.ts';
import type { PollerDeps } from './poller-deps.ts';

export { backoffSeconds, MAX_ATTEMPTS } from './notification-message.ts';
export type { NotifiedAccount, PollerDeps, PollerSync } from './poller-deps.ts';

/** Notifications an unfinished mailbox keeps unacknowledged (one would do; a few spare ones cost nothing). */
const MAX_HELD = 10;

export function createNotificationPoller(deps: PollerDeps) {
  const batchSize = deps.batchSize ?? 250;
  const concurrency = Math.max(1, deps.concurrency ?? 8);
  const rounds = deps.roundsPerAccount ?? 4;
  const idleDelayMs = deps.idleDelayMs ?? 1_000;
  const maxAttempts = deps.maxAttempts ?? MAX_ATTEMPTS;
  const processingDeadline = deps.processingDeadlineSeconds ?? 60;
  const clock = deps.clock ?? Date.now;
  const backoff = deps.backoff ?? backoffSeconds;
  const busyDelay = (err: unknown) => deps.busyDelaySeconds ?? Math.max((err as AppError).retryAfter ?? 5, 1);
  const log = deps.log.child({ component: 'poller' });
  /** Accounts left with more to sync after their bounded share of a round, with the notifications they hold. */
  const unfinished = new Map<string, { round: number; held: ReceivedNotification[]; extendedAt: number }>();
  const failures = createFailureSettler({ queue: deps.queue, log, maxAttempts, backoff, busyDelay });
  let running = false;
  let stopping = false;
  let round = 0;
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

  /** Syncs one account up to `rounds` times (each call commits on its own); true when nothing is left. */
  async function drain(accountId: string): Promise<boolean> {
    for (let i = 0; i < rounds; i++) {
      const { hasMore } = await deps.sync.syncAccount(accountId);
      if (!hasMore) return true;
      if (stopping) break;
    }
    return false;
  }

  const ackQuietly = (accountId: string, messages: ReceivedNotification[]) =>
    messages.length
      ? deps.queue.ack(messages.map((m) => m.ackId)).catch((err: unknown) => log.warn({ accountId, ...errorSummary(err) }, 'acknowledging failed; the notification will come again'))
      : undefined;

  /** After committed syncs: acknowledge everything the account holds when drained, else hold these too. */
  async function settleSuccess(accountId: string, drained: boolean, messages: ReceivedNotification[]) {
    const entry = unfinished.get(accountId);
    const held = [...(entry?.held ?? []), ...messages];
    if (drained) {
      unfinished.delete(accountId);
      for (const m of held) failures.forget(m.messageId);
      await ackQuietly(accountId, held);
      return;
    }
    // One held notification is enough to carry the unfinished work; the rest are covered by the syncs that committed.
    const extra = held.splice(MAX_HELD);
    unfinished.set(accountId, { round, held, extendedAt: entry?.extendedAt ?? clock() });
    await ackQuietly(accountId, extra);
  }

  /**
   * One account's notifications of a batch. Returns those to acknowledge with the rest of the
   * batch (unknown account, or already covered by the stored copy); the others are settled here.
   */
  async function handleGroup(email: string, group: { message: ReceivedNotification; historyId: bigint | null }[]): Promise<ReceivedNotification[]> {
    const messages = group.map((g) => g.message);
    let accountId: string | null = null;
    let drained: boolean;
    try {
      const account = await deps.resolveAccount(email);
      if (!account) return messages;
      accountId = account.id;
      await deps.noteNotification(accountId);
      if (!unfinished.has(accountId) && covered(group, account.syncedThrough)) {
        for (const m of messages) failures.forget(m.messageId);
        return messages;
      }
      drained = await drain(accountId);
    } catch (err) {
      await handBack(accountId ?? email, messages, err);
      return [];
    }
    // Committed. An ack that fails is harmless: the redelivered copy syncs from the new checkpoint.
    await settleSuccess(accountId, drained, messages);
    return [];
  }

  /** A failed sync: its notifications go back to the queue (with backoff), or are dropped when hopeless. */
  async function handBack(accountId: string, messages: ReceivedNotification[], err: unknown) {
    // If the queue fails too, the messages come back when their lease lapses: nothing is lost.
    await failures.settle(accountId, messages, err).catch((e: unknown) =>
      log.warn({ accountId, ...errorSummary(e) }, 'could not hand a failed notification back; it returns when its lease lapses'),
    );
  }

  /** Continues one unfinished mailbox with the notifications it holds. */
  async function continueDrain(accountId: string) {
    try {
      const drained = await drain(accountId);
      await settleSuccess(accountId, drained, []);
    } catch (err) {
      const held = unfinished.get(accountId)?.held ?? [];
      unfinished.delete(accountId);
      if (codeOf(err) !== 'RATE_LIMITED') log.warn({ accountId, code: codeOf(err) }, 'continuing a drain failed');
      await handBack(accountId, held, err);
    }
  }

  /** Keeps the lease of held notifications alive. */
  async function keepHeld() {
    for (const [accountId, entry] of unfinished) {
      if (clock() - entry.extendedAt <= (processingDeadline * 1000) / 3) continue;
      entry.extendedAt = clock();
      await deps.queue
        .retryLater(entry.held.map((m) => m.ackId), processingDeadline)
        .catch((err: unknown) => log.warn({ accountId, ...errorSummary(err) }, 'extending held notifications failed'));
    }
  }

  async function runOnce(): Promise<number> {
    round++;
    const messages = await deps.queue.pull(batchSize);
    const { byEmail, undecodable } = groupByMailbox(messages);
    if (undecodable.length) {
      log.warn({ count: undecodable.length }, 'undecodable notifications acknowledged and dropped');
      await deps.queue.ack(undecodable);
    }
    const groups = [...byEmail];
    /** Groups not finished yet: their notifications are kept from redelivery while the batch is worked on. */
    const pending = new Set(groups.keys());
    let extendedAt = -Infinity;
    const extendPending = async () => {
      extendedAt = clock();
      const ids = [...pending].flatMap((i) => groups[i]![1].map((g) => g.message.ackId));
      // The subscription's ack deadline may be shorter than the syncs of a batch (a lapsed lease would make the ack void).
      if (ids.length) await deps.queue.retryLater(ids, processingDeadline).catch((err: unknown) => log.warn({ ...errorSummary(err) }, 'extending the batch deadline failed'));
    };
    if (groups.length && !stopping) await extendPending();
    const done: ReceivedNotification[] = [];
    let syncsAttempted = 0;
    let next = 0;
    const worker = async () => {
      while (next < groups.length && !stopping) {
        const i = next++;
        if (clock() - extendedAt > (processingDeadline * 1000) / 3) await extendPending();
        const [email, group] = groups[i]!;
        const settled = await handleGroup(email, group);
        if (!settled.length) syncsAttempted++;
        done.push(...settled);
        pending.delete(i);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, groups.length) }, worker));
    if (done.length) await ackQuietly('batch', done);
    if (next < groups.length) {
      // Shutting down: hand the rest back at once, for this or another instance.
      await deps.queue.retryLater(groups.slice(next).flatMap(([, g]) => g.map((x) => x.message.ackId)), 0);
    }
    // Continue mailboxes that used up their share earlier (only one when the batch was full, so fresh notifications go first).
    let continued = 0;
    for (const [accountId, entry] of [...unfinished]) {
      if (stopping || (messages.length >= batchSize && continued >= 1)) break;
      if (entry.round === round) continue; // had its share this round
      continued++;
      await continueDrain(accountId);
    }
    if (!stopping) await keepHeld();
    if (messages.length) log.info({ notifications: messages.length, accounts: byEmail.size, syncsAttempted, settledWithoutSync: done.length }, 'notification batch handled');
    return messages.length + continued;
  }

  return {
    runOnce,
    /** Accounts with work left over (for tests and logs). */
    unfinished: () => [...unfinished.keys()],
    start() {
      if (running) return;
      running = true;
      stopping = false;
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
            log.warn({ ...errorSummary(err), code: (err as { code?: unknown }).code, retryInMs: ms }, 'notification pull failed');
            if (running) await sleep(ms);
          }
        }
      })();
    },
    /** Stops the loop: the sync in flight finishes and commits, nothing new starts, the rest of the batch is handed back. */
    async stop() {
      running = false;
      stopping = true;
      wake?.();
      await loop;
      loop = undefined;
      // Mailboxes not drained yet: hand their notifications back so another instance carries on now.
      const held = [...unfinished.values()].flatMap((e) => e.held.map((m) => m.ackId));
      unfinished.clear();
      if (held.length) await deps.queue.retryLater(held, 0).catch((err: unknown) => log.warn({ ...errorSummary(err) }, 'handing back held notifications failed'));
      await deps.queue.close().catch(() => undefined);
    },
  };
}
export type NotificationPoller = ReturnType<typeof createNotificationPoller>;
