/**
 * The live inbox over the real Pub/Sub wire (issue 5, parts 2, 3 and 5): the app's own poller
 * pulls the stand-in subscription through @google-cloud/pubsub and syncs through the shared
 * sync service. Counts are checked in the database; acknowledgements in the stand-in.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { notificationAccounts } from '../../../server/poller/live-inbox.ts';
import { createNotificationPoller } from '../../../server/poller/notification-poller.ts';
import { createNotificationQueue, ensureEmulatorSubscription, type NotificationQueue } from '../../../server/providers/pubsub.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders } from '../../helpers/providers.ts';
import { ALICE, cutDatabase, deadHost, startLiveWorld, SUBSCRIPTION, waitFor, type LiveWorld } from './live-harness.ts';

const BOB = { sub: 'user-bob', email: 'bob@example.com' };

/** The thread list as the user sees it (one HTTP call: polling goes to the database, not the rate-limited API). */
async function listedSubjects(w: LiveWorld): Promise<string[]> {
  const res = await w.browser.fetch('/api/mail/threads?limit=100');
  assert.equal(res.status, 200);
  return (await res.json()).threads.map((t: { subject: string }) => t.subject);
}

/** Waits (bounded) until a thread with this subject is stored in the inbox, then checks the thread list shows it. */
async function appears(w: LiveWorld, subject: string, timeoutMs = 10_000) {
  await waitFor(
    async () => (await w.sql('select 1 from mail_threads where account_id = ? and in_inbox and subject = ?', [w.accountId, subject])).length > 0,
    `"${subject}" in the inbox`,
    timeoutMs,
  );
  assert.ok((await listedSubjects(w)).includes(subject), `"${subject}" in the thread list`);
}

/**
 * Another instance's poller on the same subscription, on the app's sync service: the same
 * code as the app's own, with redelivery delays of 1 s instead of 5 s so tests need not wait.
 */
function secondInstance(w: LiveWorld, wrap: (q: NotificationQueue) => NotificationQueue = (q) => q, instance = 2, extra: { roundsPerAccount?: number } = {}) {
  const config = { ...w.app.config, pubsub: { ...w.app.config.pubsub, subscription: SUBSCRIPTION, emulatorHost: w.pubsub.host, projectId: 'test-project' } };
  return createNotificationPoller({
    queue: wrap(createNotificationQueue(config)),
    sync: w.app.container.services.sync,
    log: w.app.container.log.child({ instance }),
    idleDelayMs: 50,
    batchSize: 2,
    backoff: () => 1,
    busyDelaySeconds: 1,
    ...extra,
    ...notificationAccounts(w.app.container.orm),
  });
}

describe('live inbox over Pub/Sub', () => {
  it('a message added at the provider appears in the thread list through its notification alone, no sync route call', async (t) => {
    const w = await startLiveWorld(t);
    w.gmail.seed(ALICE, 6, { sentReplies: false });
    // Nothing synced yet: the first notification brings the whole inbox, then the new message.
    w.gmail.addMessage(ALICE, { subject: 'Live: hello from the provider' });
    await appears(w, 'Live: hello from the provider');
    await w.drained();
    assert.equal(w.app.logs.filter((l) => typeof l.path === 'string' && String(l.path).startsWith('/api/mail/sync')).length, 0, 'no sync route call');
    const stored = await w.stored();
    assert.deepEqual(stored.inbox, w.providerInbox());
    assert.equal(stored.rows, stored.distinct);
    const stats = w.pubsub.stats(SUBSCRIPTION);
    assert.equal(stats.acked, w.published, 'every notification acknowledged');
  });

  it('duplicate, stale and out-of-order notifications create no duplicate rows and never move the checkpoint back', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    w.gmail.seed(ALICE, 5, { sentReplies: false });
    await w.syncAll();
    const staleHistoryId = String(w.gmail.historyId(ALICE));
    const before = await w.checkpoint();
    // Changes whose notifications arrive duplicated and in reverse order, mixed with stale ones.
    const ids: string[] = [];
    const historyIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(w.gmail.addMessage(ALICE, { subject: `burst ${i}` }).id);
      historyIds.push(String(w.gmail.historyId(ALICE)));
    }
    w.gmail.setRead(ALICE, ids[0]!, true);
    historyIds.push(String(w.gmail.historyId(ALICE)));
    for (const h of [...historyIds].reverse()) {
      w.publish({ historyId: h });
      w.publish({ historyId: h });
      w.publish({ historyId: staleHistoryId });
    }
    await w.drained();
    const after = await w.stored();
    assert.equal(after.rows, 9, '5 seeded + 4 new, each stored once');
    assert.equal(after.distinct, 9);
    assert.deepEqual(after.inbox, w.providerInbox());
    const [threads] = await w.sql<{ n: number; d: number }>(
      'select count(*)::int as n, count(distinct provider_thread_id)::int as d from mail_threads where account_id = ?',
      [w.accountId],
    );
    assert.equal(threads!.n, threads!.d);
    const checkpoint = await w.checkpoint();
    assert.ok(checkpoint! > before!);
    assert.equal(checkpoint, BigInt(w.gmail.historyId(ALICE)), 'caught up with the provider');

    // A late notification naming an old history id changes nothing and leaves the checkpoint where it is.
    const snapshot = await w.sql('select provider_message_id, label_ids, updated_at from mail_messages where account_id = ? order by 1', [w.accountId]);
    const syncsBefore = w.syncLogs().length;
    const providerBefore = w.gmail.requests.length;
    w.publish({ historyId: historyIds[0]! });
    w.publish({ historyId: '1' });
    await w.drained();
    assert.equal(w.syncLogs().length, syncsBefore, 'covered by the stored copy: acknowledged without a sync');
    assert.equal(w.gmail.requests.length, providerBefore, 'no provider request');
    assert.equal(await w.checkpoint(), checkpoint);
    assert.deepEqual(await w.sql('select provider_message_id, label_ids, updated_at from mail_messages where account_id = ? order by 1', [w.accountId]), snapshot);
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, w.published);
  });

  it('notifications that arrive together for one account coalesce into one sync', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    for (let i = 0; i < 5; i++) w.gmail.addMessage(ALICE, { subject: `together ${i}` });
    const syncsBefore = w.syncLogs().length;
    for (let i = 0; i < 5; i++) w.publish();
    await w.drained();
    assert.equal(w.syncLogs().length - syncsBefore, 1, 'five notifications, one sync');
    const batches = () => w.app.logs.filter((l) => l.msg === 'notification batch handled').map((l) => [l.notifications, l.accounts]);
    await waitFor(() => batches().length > 0, 'the batch log line');
    assert.deepEqual(batches(), [[5, 1]], 'one batch of five notifications for one account');
    assert.equal((await w.stored()).rows, 5);
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 5);
    const [state] = await w.sql<{ last_notification_at: string | null }>('select last_notification_at from sync_states where account_id = ?', [w.accountId]);
    assert.ok(state!.last_notification_at && Date.now() - new Date(state!.last_notification_at).getTime() < 60_000, 'the last notification time is stored');
  });

  it('a notification that arrives while the sync route runs for the account waits its turn: no overlap, nothing lost', async (t) => {
    const w = await startLiveWorld(t, { poller: false, forward: false });
    assert.equal(w.app.container.liveInbox.poller, undefined, 'no poller without PUBSUB_SUBSCRIPTION');
    await w.syncAll();
    const poller = secondInstance(w);
    t.after(() => poller.stop());
    w.gmail.addMessage(ALICE, { subject: 'during the route sync' });
    w.gmail.setLatency(200);
    const route = w.browser.fetch('/api/mail/sync', { method: 'POST', headers: csrfHeaders(w.csrfToken, WEB_ORIGIN) });
    await waitFor(async () => (await w.sql('select 1 from sync_states where account_id = ? and lease_owner is not null', [w.accountId])).length > 0, 'the route sync to hold the lease');
    const added = w.gmail.addMessage(ALICE, { subject: 'while the route syncs' });
    w.publish();
    poller.start();
    await waitFor(() => w.app.logs.some((l) => l.msg === 'a sync of the account is running; notification deferred'), 'the poller to defer');
    assert.equal((await route).status, 200);
    w.gmail.setLatency(0);
    await waitFor(async () => (await w.stored()).inbox.some((r) => r.startsWith(added.id)), 'the deferred notification synced');
    await w.drained();
    const s = await w.stored();
    assert.deepEqual(s.inbox, w.providerInbox());
    assert.equal(s.rows, s.distinct);
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1);
  });

  it('acknowledges a message only once its sync committed (checked at the moment of the ack)', async (t) => {
    const w = await startLiveWorld(t, { poller: false, forward: false });
    w.gmail.seed(ALICE, 3, { sentReplies: false });
    const seen: { rowsAtAck: number; expected: number }[] = [];
    let expected = 0;
    const poller = secondInstance(w, (q) => ({
      ...q,
      async ack(ackIds) {
        const [row] = await w.sql<{ n: number }>('select count(*)::int as n from mail_messages where account_id = ?', [w.accountId]);
        seen.push({ rowsAtAck: row!.n, expected });
        return q.ack(ackIds);
      },
    }));
    t.after(() => poller.stop());
    for (let i = 0; i < 3; i++) {
      w.gmail.addMessage(ALICE, { subject: `ack ${i}` });
      expected = 3 + i + 1;
      w.publish();
      assert.ok((await poller.runOnce()) > 0);
    }
    assert.deepEqual(seen.map((s) => s.rowsAtAck), seen.map((s) => s.expected), 'the rows were committed before each ack');
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 3);
  });

  it('a sync that fails at its commit leaves the message unacknowledged; it is redelivered and synced later', async (t) => {
    const w = await startLiveWorld(t, { poller: false, forward: false });
    await w.syncAll();
    const poller = secondInstance(w);
    poller.start();
    t.after(() => poller.stop());
    // The database refuses the new row: the provider reads succeed, the commit fails.
    await w.sql(`create function refuse_new_mail() returns trigger language plpgsql as $$ begin raise exception 'refused for the test'; end $$`);
    await w.sql('create trigger refuse_new_mail before insert on mail_messages for each row execute function refuse_new_mail()');
    const added = w.gmail.addMessage(ALICE, { subject: 'Commit fails first' });
    w.publish();
    await waitFor(() => w.app.logs.some((l) => l.msg === 'sync for notification failed; will be redelivered'), 'the failed sync');
    let stats = w.pubsub.stats(SUBSCRIPTION);
    assert.equal(stats.acked, 0, 'not acknowledged');
    assert.equal(stats.leased + stats.available, 1, 'still in the subscription');
    assert.equal((await w.stored()).rows, 0);
    await w.sql('drop trigger refuse_new_mail on mail_messages');
    await waitFor(async () => (await w.stored()).inbox.some((r) => r.startsWith(added.id)), 'the redelivered notification to sync the message');
    await w.drained();
    stats = w.pubsub.stats(SUBSCRIPTION);
    assert.equal(stats.acked, 1);
    assert.ok(stats.deliveries >= 2, 'delivered again after the failed attempt');
    assert.equal((await w.stored()).rows, 1);
  });

  it('provider quota errors: the message is redelivered after the provider Retry-After, the loop goes on', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    w.gmail.injectFault({ endpoint: 'history.list', status: 429, reason: 'userRateLimitExceeded', retryAfterSeconds: 1 });
    w.gmail.addMessage(ALICE, { subject: 'After the quota' });
    w.publish();
    await appears(w, 'After the quota', 15_000);
    await w.drained();
    const failed = w.app.logs.filter((l) => l.msg === 'sync for notification failed; will be redelivered');
    assert.deepEqual(failed.map((l) => [l.code, l.retryInSeconds]), [['MAIL_RATE_LIMITED', 1]]);
    assert.equal(w.pubsub.stats(SUBSCRIPTION).deliveries, 2);
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1);
  });

  it('history gone: the notification-driven sync falls back to a full resync that reconciles the store', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    w.gmail.seed(ALICE, 8, { sentReplies: false });
    await w.syncAll();
    const inbox = w.gmail.inbox(ALICE);
    w.gmail.archive(ALICE, inbox[0]!.id);
    w.gmail.deleteMessage(ALICE, inbox[1]!.id);
    w.gmail.setRead(ALICE, inbox[2]!.id, !inbox[2]!.unread);
    w.gmail.addMessage(ALICE, { subject: 'Across the expiry' });
    w.gmail.expireHistory(ALICE);
    w.gmail.resetCounters();
    w.publish();
    await w.drained();
    assert.ok(w.gmail.calls['messages.list']! >= 1, 'listed the inbox again');
    const stored = await w.stored();
    assert.deepEqual(stored.inbox, w.providerInbox());
    assert.equal(stored.rows, stored.distinct);
  });

  it('several instances poll the same subscription at once: every change lands once, every message is acknowledged', async (t) => {
    const w = await startLiveWorld(t, { poller: false });
    const bob = await w.signInAs(BOB);
    w.gmail.seed(ALICE, 4, { sentReplies: false });
    w.gmail.seed(BOB.email, 4, { sentReplies: false });
    w.gmail.setLatency(10); // syncs take a moment, so the instances overlap
    const instances = [secondInstance(w, undefined, 1), secondInstance(w, undefined, 2)];
    for (const p of instances) {
      p.start();
      t.after(() => p.stop());
    }
    for (let i = 0; i < 12; i++) {
      const email = i % 2 ? BOB.email : ALICE;
      const m = w.gmail.addMessage(email, { subject: `multi ${i}` });
      if (i % 3 === 0) w.gmail.setRead(email, m.id, true);
      if (i % 4 === 1) w.gmail.archive(email, w.gmail.inbox(email)[2]!.id);
      if (i % 5 === 2) w.publish({ emailAddress: email }); // and a duplicate now and then
    }
    await w.drained(30_000);
    for (const [id, email] of [[w.accountId, ALICE], [bob.accountId, BOB.email]] as const) {
      const s = await w.stored(id);
      assert.deepEqual(s.inbox, w.providerInbox(email), `${email}: stored inbox equals the provider's`);
      assert.equal(s.rows, s.distinct, `${email}: no duplicate rows`);
      assert.equal(await w.checkpoint(id), BigInt(w.gmail.historyId(email)), `${email}: caught up`);
    }
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, w.published);
    const handled = () => [...new Set(w.app.logs.filter((l) => l.msg === 'notification batch handled').map((l) => l.instance))].sort();
    await waitFor(() => handled().length === 2, 'both instances to have handled notifications');
    assert.deepEqual(handled(), [1, 2]);
  });

  it('an instance that stops half-way through a big mailbox hands its notification back; another instance finishes it', async (t) => {
    const w = await startLiveWorld(t, { poller: false, forward: false });
    w.gmail.seed(ALICE, 120, { sentReplies: false });
    w.publish();
    const first = secondInstance(w, undefined, 1, { roundsPerAccount: 1 });
    assert.ok((await first.runOnce()) > 0);
    assert.equal((await w.stored()).rows, 50, 'one bounded share synced');
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 0, 'not acknowledged: the mailbox is not drained');
    await first.stop();
    assert.equal(w.pubsub.stats(SUBSCRIPTION).available, 1, 'handed back at once');
    const second = secondInstance(w, undefined, 2);
    t.after(() => second.stop());
    assert.ok((await second.runOnce()) > 0);
    await w.drained();
    const s = await w.stored();
    assert.equal(s.rows, 120);
    assert.deepEqual(s.inbox, w.providerInbox());
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1);
  });

  it('the loop survives subscription errors: it logs, backs off and then delivers', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    w.pubsub.injectFault({ method: 'Pull', code: grpc.status.NOT_FOUND, details: 'Subscription does not exist' });
    w.gmail.addMessage(ALICE, { subject: 'After the queue hiccup' });
    w.publish();
    await appears(w, 'After the queue hiccup', 15_000);
    const failures = w.app.logs.filter((l) => l.msg === 'notification pull failed');
    assert.deepEqual(failures.map((l) => [l.code, l.retryInMs]), [[grpc.status.NOT_FOUND, 1000]], 'logged, backed off');
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1);
  });

  it('a waiting pull that ends at its deadline on an idle subscription is an empty pull, not an error', async (t) => {
    const w = await startLiveWorld(t, { poller: false });
    const config = { ...w.app.config, pubsub: { ...w.app.config.pubsub, subscription: SUBSCRIPTION, emulatorHost: w.pubsub.host, projectId: 'test-project' } };
    const queue = createNotificationQueue(config);
    t.after(() => queue.close());
    w.pubsub.injectFault({ method: 'Pull', code: grpc.status.DEADLINE_EXCEEDED });
    assert.deepEqual(await queue.pull(10), []);
    w.pubsub.injectFault({ method: 'Pull', code: grpc.status.UNAVAILABLE });
    await assert.rejects(queue.pull(10), (err: { code?: number }) => err.code === grpc.status.UNAVAILABLE, 'other errors still fail the pull');
    w.publish();
    const [m] = await queue.pull(10);
    assert.deepEqual(JSON.parse(m!.data.toString('utf8')).emailAddress, ALICE);
  });

  it('with an emulator, start-up creates the topic and subscription when missing (and leaves existing ones alone)', async (t) => {
    const w = await startLiveWorld(t, { poller: false });
    const config = {
      ...w.app.config,
      pubsub: { projectId: 'test-project', topic: 'projects/test-project/topics/fresh', subscription: 'fresh-sub', emulatorHost: w.pubsub.host },
    };
    await ensureEmulatorSubscription(config);
    assert.deepEqual(w.pubsub.stats('fresh-sub'), { available: 0, leased: 0, acked: 0, deliveries: 0 });
    w.pubsub.publish('fresh', { emailAddress: ALICE, historyId: '1' });
    await ensureEmulatorSubscription(config);
    assert.equal(w.pubsub.stats('fresh-sub').available, 1, 'the existing subscription was kept, with its message');
  });

  it('a database outage: the poller logs, leaves the notification for later and recovers; /health tells the truth throughout', async (t) => {
    const w = await startLiveWorld(t, { poller: false, forward: false });
    await w.syncAll();
    const poller = secondInstance(w);
    poller.start();
    t.after(() => poller.stop());
    const healthy = await fetch(`${w.app.url}/health`);
    assert.equal(healthy.status, 200);
    const outage = await cutDatabase(w.app.databaseUrl);
    let restored = false;
    t.after(() => (restored ? undefined : outage.restore()));
    w.gmail.addMessage(ALICE, { subject: 'During the outage' });
    w.publish();
    await waitFor(() => w.app.logs.some((l) => l.msg === 'sync for notification failed; will be redelivered'), 'the poller to meet the outage');
    const down = await fetch(`${w.app.url}/health`);
    assert.equal(down.status, 503);
    assert.equal((await down.json()).database, 'down');
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 0, 'nothing acknowledged while nothing can commit');
    await outage.restore();
    restored = true;
    await waitFor(async () => (await fetch(`${w.app.url}/health`)).status === 200, '/health back to 200', 10_000, 250);
    await appears(w, 'During the outage');
    await w.drained();
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1);
  });

  it('an unreachable queue at start-up blocks neither the HTTP server nor shutdown', async (t) => {
    const w = await startLiveWorld(t, { emulatorHost: await deadHost() });
    const health = await fetch(`${w.app.url}/health`);
    assert.equal(health.status, 200, 'the server answers');
    const threads = await w.browser.fetch('/api/mail/threads');
    assert.equal(threads.status, 200);
    await waitFor(() => w.app.logs.filter((l) => l.msg === 'notification pull failed').length >= 2, 'the poller to keep trying');
    await w.app.close();
    assert.ok(w.app.logs.filter((l) => l.msg === 'notification pull failed').every((l) => typeof l.retryInMs === 'number'));
  });

  it('stops on shutdown with nothing in flight: the running sync commits and acknowledges, nothing starts afterwards', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    for (let i = 0; i < 3; i++) w.gmail.addMessage(ALICE, { subject: `in flight ${i}` });
    w.gmail.setLatency(150);
    w.gmail.resetCounters();
    w.publish();
    await waitFor(() => w.gmail.calls['history.list']! > 0, 'a sync in flight');
    // Shut down as the process does (stop accepting requests, stop the workers, close the
    // database); what the stopped poller left behind is read before the test database goes.
    await w.app.stop();
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: w.app.databaseUrl });
    await client.connect();
    let leftBehind: { rows: number; leaseOwner: string | null };
    try {
      const { rows } = await client.query('select count(*)::int as n from mail_messages where account_id = $1', [w.accountId]);
      const { rows: lease } = await client.query('select lease_owner from sync_states where account_id = $1', [w.accountId]);
      leftBehind = { rows: rows[0].n, leaseOwner: lease[0].lease_owner };
    } finally {
      await client.end();
    }
    const requestsAtStop = w.gmail.requests.length;
    assert.deepEqual(leftBehind, { rows: 3, leaseOwner: null }, 'the sync in flight committed; no lease left behind');
    assert.ok(!w.app.logs.some((l) => l.msg === 'mail sync failed'), 'the sync in flight was not cut off');
    const stats = w.pubsub.stats(SUBSCRIPTION);
    assert.equal(stats.acked, 1, 'its message acknowledged');
    assert.equal(stats.leased + stats.available, 0);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(w.gmail.requests.length, requestsAtStop, 'no provider call after the stop');
  });
});
