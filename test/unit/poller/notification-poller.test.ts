/**
 * The notification poller's decisions, with a recording queue and a scripted sync: grouping
 * (coalescing), ack only after the sync committed, redelivery with backoff, the poison bound
 * (also when the queue reports no delivery attempt, as the real service does without a
 * dead-letter policy), deferral without giving up while another sync holds the lease,
 * bounded drains continued (and retried, not forgotten) in later rounds, the loop's
 * resilience and a clean stop.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { AppError } from '../../../server/domain/errors.ts';
import { createLogger } from '../../../server/logger.ts';
import { backoffSeconds, createNotificationPoller, MAX_ATTEMPTS, type PollerDeps } from '../../../server/poller/notification-poller.ts';
import type { NotificationQueue, ReceivedNotification } from '../../../server/providers/pubsub.ts';

type Event =
  | { kind: 'pull' }
  | { kind: 'ack'; ids: string[] }
  | { kind: 'retry'; ids: string[]; seconds: number }
  | { kind: 'sync'; account: string }
  | { kind: 'synced'; account: string }
  | { kind: 'close' };

function logSink() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk, _e, cb) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    }),
  });
  return { log, lines };
}

/** A queue that hands out scripted batches and records every call. */
function recordingQueue(events: Event[]) {
  const batches: ReceivedNotification[][] = [];
  let failPulls = 0;
  let failAcks = 0;
  const queue: NotificationQueue = {
    async pull() {
      events.push({ kind: 'pull' });
      if (failPulls > 0) {
        failPulls--;
        throw Object.assign(new Error('14 UNAVAILABLE: queue unreachable'), { code: 14 });
      }
      return batches.shift() ?? [];
    },
    async ack(ids) {
      if (failAcks > 0) {
        failAcks--;
        throw Object.assign(new Error('14 UNAVAILABLE: ack failed'), { code: 14 });
      }
      events.push({ kind: 'ack', ids: [...ids] });
    },
    async retryLater(ids, seconds) {
      events.push({ kind: 'retry', ids: [...ids], seconds });
    },
    async close() {
      events.push({ kind: 'close' });
    },
  };
  return {
    queue,
    push: (...b: ReceivedNotification[][]) => void batches.push(...b),
    failNextPulls: (n: number) => void (failPulls = n),
    failNextAcks: (n: number) => void (failAcks = n),
  };
}

let seq = 0;
function note(email: string, opts: { messageId?: string; deliveryAttempt?: number; historyId?: unknown } = {}): ReceivedNotification {
  seq++;
  const messageId = opts.messageId ?? `m${seq}`;
  const historyId = 'historyId' in opts ? opts.historyId : String(1000 + seq);
  return { ackId: `${messageId}#${seq}`, messageId, data: Buffer.from(JSON.stringify({ emailAddress: email, historyId })), deliveryAttempt: opts.deliveryAttempt ?? 0 };
}

const ACCOUNTS: Record<string, string> = { 'alice@example.com': 'acc-alice', 'bob@example.com': 'acc-bob' };

function setup(opts: { sync?: (account: string, call: number) => Promise<{ hasMore: boolean }>; deps?: Partial<PollerDeps>; syncedThrough?: Record<string, string> } = {}) {
  const events: Event[] = [];
  const q = recordingQueue(events);
  const { log, lines } = logSink();
  const calls = new Map<string, number>();
  let now = 1_000_000;
  const poller = createNotificationPoller({
    queue: q.queue,
    log,
    resolveAccount: async (email) => (ACCOUNTS[email] ? { id: ACCOUNTS[email], syncedThrough: opts.syncedThrough?.[ACCOUNTS[email]] ?? null } : null),
    noteNotification: async () => {},
    sync: {
      async syncAccount(account) {
        const n = (calls.get(account) ?? 0) + 1;
        calls.set(account, n);
        events.push({ kind: 'sync', account });
        const r = opts.sync ? await opts.sync(account, n) : { hasMore: false };
        events.push({ kind: 'synced', account });
        return { ...r, messagesSynced: 0 };
      },
    },
    clock: () => now,
    idleDelayMs: 20,
    ...opts.deps,
  });
  return { poller, events, lines, calls, q, advance: (ms: number) => void (now += ms) };
}

const acked = (events: Event[]) => events.flatMap((e) => (e.kind === 'ack' ? e.ids : []));
const retried = (events: Event[]) => events.filter((e): e is Extract<Event, { kind: 'retry' }> => e.kind === 'retry' && e.seconds !== 60);

describe('notification poller', () => {
  it('coalesces a batch into one sync per account and acknowledges each message only after its account synced', async () => {
    const w = setup();
    const a = [note('alice@example.com'), note('ALICE@example.com'), note('alice@example.com')];
    const b = note('bob@example.com');
    w.q.push([a[0]!, b, a[1]!, a[2]!]);
    assert.equal(await w.poller.runOnce(), 4);
    assert.deepEqual(Object.fromEntries(w.calls), { 'acc-alice': 1, 'acc-bob': 1 }, 'one sync per account, however many notifications');
    const syncedAlice = w.events.findIndex((e) => e.kind === 'synced' && e.account === 'acc-alice');
    const syncedBob = w.events.findIndex((e) => e.kind === 'synced' && e.account === 'acc-bob');
    const ackAlice = w.events.findIndex((e) => e.kind === 'ack' && e.ids.includes(a[0]!.ackId));
    const ackBob = w.events.findIndex((e) => e.kind === 'ack' && e.ids.includes(b.ackId));
    assert.ok(syncedAlice >= 0 && ackAlice > syncedAlice, 'alice acked after her sync returned');
    assert.ok(syncedBob >= 0 && ackBob > syncedBob, 'bob acked after his sync returned');
    assert.deepEqual(acked(w.events).sort(), [...a, b].map((m) => m.ackId).sort());
    // The batch is kept from redelivery while it is worked on, before the first sync starts.
    const firstSync = w.events.findIndex((e) => e.kind === 'sync');
    const extend = w.events.findIndex((e) => e.kind === 'retry' && e.seconds === 60);
    assert.ok(extend >= 0 && extend < firstSync);
  });

  it('acknowledges without a sync the notifications the stored copy already covers (history id not above the checkpoint)', async () => {
    const w = setup({ syncedThrough: { 'acc-alice': '5000', 'acc-bob': '5000' } });
    const old = [note('alice@example.com', { historyId: '4999' }), note('alice@example.com', { historyId: 5000 })];
    const newer = [note('bob@example.com', { historyId: '4000' }), note('bob@example.com', { historyId: '5001' })];
    w.q.push([...old, ...newer]);
    assert.equal(await w.poller.runOnce(), 4);
    assert.deepEqual(Object.fromEntries(w.calls), { 'acc-bob': 1 }, 'alice covered (string or number ids); bob has one change beyond the checkpoint');
    assert.deepEqual(acked(w.events).sort(), [...old, ...newer].map((m) => m.ackId).sort());
    const batchLog = w.lines.find((l) => l.msg === 'notification batch handled')!;
    assert.equal(batchLog.settledWithoutSync, 2);
    assert.equal(batchLog.syncsAttempted, 1);

    // No usable history id, or no checkpoint (never synced / listing in progress): always sync.
    const v = setup({ syncedThrough: { 'acc-alice': '5000' } });
    v.q.push([note('alice@example.com', { historyId: undefined })], [note('alice@example.com', { historyId: '12abc' })], [note('alice@example.com', { historyId: -3 })], [note('bob@example.com', { historyId: '1' })]);
    for (let i = 0; i < 4; i++) await v.poller.runOnce();
    assert.deepEqual(Object.fromEntries(v.calls), { 'acc-alice': 3, 'acc-bob': 1 });
  });

  it('does not skip a covered notification of a mailbox still being drained', async () => {
    const w = setup({ sync: async (_a, n) => ({ hasMore: n < 2 }), deps: { roundsPerAccount: 1 }, syncedThrough: { 'acc-alice': '9000' } });
    const first = note('alice@example.com', { historyId: '9001' });
    w.q.push([first]);
    await w.poller.runOnce();
    assert.deepEqual(w.poller.unfinished(), ['acc-alice']);
    const late = note('alice@example.com', { historyId: '8000' });
    w.q.push([late]);
    await w.poller.runOnce();
    assert.equal(w.calls.get('acc-alice'), 2, 'the new notification joined the unfinished drain');
    assert.deepEqual(acked(w.events).sort(), [first.ackId, late.ackId].sort());
  });

  it('syncs the accounts of a batch concurrently, at most `concurrency` at a time, and acknowledges each group after its own sync', async () => {
    const emails = ['a', 'b', 'c', 'd', 'e'].map((x) => `${x}@example.com`);
    for (const e of emails) ACCOUNTS[e] = `acc-${e[0]}`;
    try {
      let inFlight = 0;
      let most = 0;
      const w = setup({
        sync: async () => {
          inFlight++;
          most = Math.max(most, inFlight);
          await new Promise((r) => setTimeout(r, 20));
          inFlight--;
          return { hasMore: false };
        },
        deps: { concurrency: 3 },
      });
      const notes = emails.map((e) => note(e));
      w.q.push(notes);
      const started = Date.now();
      await w.poller.runOnce();
      assert.equal(most, 3, 'three syncs overlapped, never more');
      assert.equal(w.calls.size, 5);
      assert.ok(Date.now() - started < 5 * 20, 'faster than one after the other');
      assert.deepEqual(acked(w.events).sort(), notes.map((m) => m.ackId).sort());
    } finally {
      for (const e of emails) delete ACCOUNTS[e];
    }
  });

  it('acknowledges at once what names no known account or cannot be decoded, without syncing', async () => {
    const w = setup();
    const unknown = note('nobody@example.com');
    const garbage: ReceivedNotification = { ackId: 'g#1', messageId: 'g', data: Buffer.from('{not json'), deliveryAttempt: 1 };
    const noEmail: ReceivedNotification = { ackId: 'n#1', messageId: 'n', data: Buffer.from('{"historyId":"5"}'), deliveryAttempt: 1 };
    w.q.push([unknown, garbage, noEmail]);
    await w.poller.runOnce();
    assert.equal(w.calls.size, 0);
    assert.deepEqual(acked(w.events).sort(), ['g#1', 'n#1', unknown.ackId].sort());
  });

  it('leaves a message whose sync failed for redelivery with a growing delay, and acknowledges it once a sync commits', async () => {
    const w = setup({ sync: async (_a, n) => (n <= 3 ? Promise.reject(new AppError('SYNC_FAILED')) : { hasMore: false }) });
    const m = note('alice@example.com', { messageId: 'same' });
    for (let i = 0; i < 4; i++) {
      w.q.push([{ ...m, ackId: `same#${i}` }]);
      await w.poller.runOnce();
    }
    assert.deepEqual(retried(w.events).map((e) => [e.ids, e.seconds]), [
      [['same#0'], 5],
      [['same#1'], 10],
      [['same#2'], 20],
    ]);
    assert.deepEqual(acked(w.events), ['same#3'], 'acknowledged only by the delivery whose sync committed');
    assert.deepEqual([1, 2, 3, 4, 8, 20].map(backoffSeconds), [5, 10, 20, 40, 600, 600]);
  });

  it('follows the provider Retry-After on quota errors', async () => {
    const w = setup({ sync: async () => Promise.reject(new AppError('MAIL_RATE_LIMITED', { retryAfter: 37 })) });
    w.q.push([note('alice@example.com')]);
    await w.poller.runOnce();
    assert.deepEqual(retried(w.events).map((e) => e.seconds), [37]);
    assert.deepEqual(acked(w.events), []);
  });

  it('gives up on a poison message after MAX_ATTEMPTS failed syncs, though the queue reports no delivery attempt', async () => {
    const w = setup({ sync: async () => Promise.reject(new AppError('SYNC_FAILED')) });
    let deliveries = 0;
    for (let i = 0; i < MAX_ATTEMPTS + 3 && acked(w.events).length === 0; i++) {
      deliveries++;
      w.q.push([note('alice@example.com', { messageId: 'poison', deliveryAttempt: 0 })]);
      await w.poller.runOnce();
    }
    assert.equal(deliveries, MAX_ATTEMPTS, 'dropped at the MAX_ATTEMPTS-th failure');
    assert.equal(w.calls.get('acc-alice'), MAX_ATTEMPTS);
    assert.equal(acked(w.events).length, 1, 'dropped by acknowledging it');
    assert.ok(w.lines.some((l) => l.msg === 'notification dropped after repeated sync failures'));
  });

  it('drops only the messages of a coalesced group that used up their attempts', async () => {
    const w = setup({ sync: async () => Promise.reject(new AppError('SYNC_FAILED')) });
    for (let i = 0; i < MAX_ATTEMPTS - 1; i++) {
      w.q.push([note('alice@example.com', { messageId: 'old' })]);
      await w.poller.runOnce();
    }
    w.events.length = 0;
    const old = note('alice@example.com', { messageId: 'old' });
    const fresh = note('alice@example.com', { messageId: 'fresh' });
    w.q.push([old, fresh]);
    await w.poller.runOnce();
    assert.deepEqual(acked(w.events), [old.ackId]);
    assert.deepEqual(retried(w.events).map((e) => [e.ids, e.seconds]), [[[fresh.ackId], 5]]);
  });

  it('defers, without ever giving up, while another sync holds the account (route, sweep or another instance)', async () => {
    const busyFor = MAX_ATTEMPTS * 3;
    const w = setup({ sync: async (_a, n) => (n <= busyFor ? Promise.reject(new AppError('RATE_LIMITED', { retryAfter: 5 })) : { hasMore: false }) });
    for (let i = 0; i <= busyFor; i++) {
      w.q.push([note('alice@example.com', { messageId: 'waiting', deliveryAttempt: i + 1 })]);
      await w.poller.runOnce();
    }
    assert.equal(retried(w.events).length, busyFor);
    assert.ok(retried(w.events).every((e) => e.seconds === 5));
    assert.equal(acked(w.events).length, 1, 'acknowledged once its own sync ran');
    const ackAt = w.events.findIndex((e) => e.kind === 'ack');
    assert.ok(w.events.slice(0, ackAt).some((e) => e.kind === 'synced'));
  });

  it('drops the notification of an account that needs reconnection at once', async () => {
    const w = setup({ sync: async () => Promise.reject(new AppError('TOKEN_EXPIRED')) });
    w.q.push([note('alice@example.com')]);
    await w.poller.runOnce();
    assert.equal(acked(w.events).length, 1);
    assert.equal(retried(w.events).length, 0);
  });

  it('a database outage while resolving the account leaves the batch for redelivery, without throwing', async () => {
    let down = true;
    const w = setup({
      deps: {
        resolveAccount: async (email) => {
          if (down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
          return ACCOUNTS[email] ? { id: ACCOUNTS[email], syncedThrough: null } : null;
        },
      },
    });
    const m = note('alice@example.com');
    w.q.push([m]);
    await w.poller.runOnce();
    assert.deepEqual(retried(w.events).map((e) => [e.ids, e.seconds]), [[[m.ackId], 5]]);
    assert.equal(w.calls.size, 0);
    down = false;
    w.q.push([{ ...m, ackId: 'again' }]);
    await w.poller.runOnce();
    assert.deepEqual(acked(w.events), ['again']);
  });

  it('an acknowledgement that fails after the commit is logged and does not hold up the rest of the batch', async () => {
    const w = setup();
    const a = note('alice@example.com');
    const b = note('bob@example.com');
    w.q.push([a, b]);
    w.q.failNextAcks(1);
    await w.poller.runOnce();
    assert.deepEqual(Object.fromEntries(w.calls), { 'acc-alice': 1, 'acc-bob': 1 });
    assert.deepEqual(acked(w.events), [b.ackId], "bob's message acknowledged; alice's comes again and syncs harmlessly");
    assert.ok(w.lines.some((l) => l.msg === 'acknowledging failed; the notification will come again'));
  });

  it('syncs a big mailbox in bounded shares per round, holding its notification (lease kept alive) until it is drained', async () => {
    const w = setup({ sync: async (_a, n) => ({ hasMore: n < 7 }), deps: { roundsPerAccount: 3 } });
    const m = note('alice@example.com');
    w.q.push([m]);
    assert.ok((await w.poller.runOnce()) > 0);
    assert.equal(w.calls.get('acc-alice'), 3, 'one bounded share');
    assert.deepEqual(acked(w.events), [], 'not acknowledged while work remains');
    assert.deepEqual(w.poller.unfinished(), ['acc-alice']);
    w.advance(25_000);
    w.events.length = 0;
    assert.ok((await w.poller.runOnce()) > 0);
    assert.equal(w.calls.get('acc-alice'), 6);
    assert.deepEqual(
      w.events.filter((e) => e.kind === 'retry').map((e) => [(e as { ids: string[] }).ids, (e as { seconds: number }).seconds]),
      [[[m.ackId], 60]],
      'the held notification is kept from redelivery',
    );
    assert.deepEqual(acked(w.events), []);
    await w.poller.runOnce();
    assert.equal(w.calls.get('acc-alice'), 7);
    assert.deepEqual(acked(w.events), [m.ackId], 'acknowledged once drained');
    assert.deepEqual(w.poller.unfinished(), []);
    assert.equal(await w.poller.runOnce(), 0, 'idle once drained');
    assert.equal(w.calls.get('acc-alice'), 7);
  });

  it('a failed continuation hands the held notification back for redelivery (Retry-After, backoff), which carries on', async () => {
    let failing = true;
    const w = setup({
      sync: async (_a, n) => {
        if (n === 1) return { hasMore: true };
        if (failing) throw new AppError('MAIL_RATE_LIMITED', { retryAfter: 30 });
        return { hasMore: false };
      },
      deps: { roundsPerAccount: 1 },
    });
    const m = note('alice@example.com', { messageId: 'big' });
    w.q.push([m]);
    await w.poller.runOnce();
    await w.poller.runOnce();
    assert.equal(w.calls.get('acc-alice'), 2, 'the continuation ran and failed');
    assert.deepEqual(retried(w.events).map((e) => [e.ids, e.seconds]), [[[m.ackId], 30]], 'handed back, to come again after the Retry-After');
    assert.deepEqual(w.poller.unfinished(), []);
    assert.deepEqual(acked(w.events), []);
    failing = false;
    const again = { ...m, ackId: 'big#again' };
    w.q.push([again]);
    await w.poller.runOnce();
    assert.deepEqual(acked(w.events), ['big#again'], 'the redelivery finished the mailbox');

    const hopeless = setup({ sync: async (_a, n) => (n === 1 ? { hasMore: true } : Promise.reject(new AppError('TOKEN_EXPIRED'))), deps: { roundsPerAccount: 1 } });
    const h = note('alice@example.com');
    hopeless.q.push([h]);
    await hopeless.poller.runOnce();
    await hopeless.poller.runOnce();
    assert.deepEqual(hopeless.poller.unfinished(), []);
    assert.deepEqual(acked(hopeless.events), [h.ackId], 'dropped: the account needs reconnection');
  });

  it('the loop survives queue errors: it logs, backs off and goes on', async () => {
    const w = setup();
    w.q.failNextPulls(1);
    w.q.push([note('alice@example.com')]);
    w.poller.start();
    const deadline = Date.now() + 10_000;
    while (acked(w.events).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await w.poller.stop();
    assert.equal(acked(w.events).length, 1, 'the notification was handled after the failed pull');
    const failed = w.lines.filter((l) => l.msg === 'notification pull failed');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.retryInMs, 1000);
    assert.equal(w.events.at(-1)!.kind, 'close', 'the queue is closed on stop');
  });

  it('stop lets the sync in flight commit, starts nothing new and hands back every notification not done', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const syncStarted = new Promise<void>((r) => (started = r));
    const w = setup({
      sync: async (account) => {
        if (account === 'acc-alice') {
          started();
          await gate;
          return { hasMore: true }; // more to do: must not continue once stopping
        }
        return { hasMore: false };
      },
      deps: { concurrency: 1 },
    });
    const a = note('alice@example.com');
    const b = note('bob@example.com');
    w.q.push([a, b]);
    w.poller.start();
    await syncStarted;
    let stopped = false;
    const stopping = w.poller.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(stopped, false, 'stop waits for the sync in flight');
    release();
    await stopping;
    assert.deepEqual(Object.fromEntries(w.calls), { 'acc-alice': 1 }, 'no sync started after stop');
    assert.deepEqual(acked(w.events), [], 'alice is not drained: her notification is not acknowledged');
    assert.deepEqual(
      w.events.filter((e) => e.kind === 'retry' && e.seconds === 0).map((e) => (e as { ids: string[] }).ids),
      [[b.ackId], [a.ackId]],
      'the rest of the batch, then the unfinished mailbox, handed back for immediate redelivery',
    );
    assert.equal(w.events.filter((e) => e.kind === 'pull').length, 1, 'no pull after stop');
    assert.equal(w.events.at(-1)!.kind, 'close');
  });

  it('stop after a drained sync: its message is acknowledged before the queue closes', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = setup({ sync: async () => (await gate, { hasMore: false }) });
    const a = note('alice@example.com');
    w.q.push([a]);
    w.poller.start();
    await waitForEvent(w.events, 'sync');
    const stopping = w.poller.stop();
    release();
    await stopping;
    assert.deepEqual(acked(w.events), [a.ackId]);
    assert.equal(w.events.at(-1)!.kind, 'close');
  });
});

async function waitForEvent(events: Event[], kind: Event['kind']) {
  const deadline = Date.now() + 5_000;
  while (!events.some((e) => e.kind === kind)) {
    assert.ok(Date.now() < deadline, `no ${kind} event`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
