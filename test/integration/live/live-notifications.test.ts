/**
 * The live inbox over the real Pub/Sub wire: the app's notification intake pulls the stand-in
 * subscription through @google-cloud/pubsub and stores one `mail-sync` job per mailbox in the
 * job engine (pg-boss, same database); the job workers sync through the shared sync service.
 * Counts are checked in the database; acknowledgements in the stand-in.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { createNotificationQueue, ensureEmulatorSubscription } from '../../../server/providers/pubsub.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders } from '../../helpers/providers.ts';
import {
  ALICE,
  cutDatabase,
  deadHost,
  LOADED_SKEW_MS,
  startLiveWorld,
  SUBSCRIPTION,
  waitFor,
  type LiveWorld,
} from './live-harness.ts';

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
    async () =>
      (
        await w.sql('select 1 from mail_threads where account_id = ? and in_inbox and subject = ?', [
          w.accountId,
          subject,
        ])
      ).length > 0,
    `"${subject}" in the inbox`,
    timeoutMs,
  );
  assert.ok((await listedSubjects(w)).includes(subject), `"${subject}" in the thread list`);
}

const jobLines = (w: LiveWorld, outcome?: string) =>
  w.app.logs.filter(
    (l) => l.msg === 'mail sync job done' && l.accountId === w.accountId && (!outcome || l.outcome === outcome),
  );

describe('live inbox over Pub/Sub', () => {
  it('a message added at the provider appears in the thread list through its notification alone, no sync route call', async (t) => {
    const w = await startLiveWorld(t);
    w.gmail.seed(ALICE, 6, { sentReplies: false });
    w.gmail.addMessage(ALICE, { subject: 'Live: hello from the provider' });
    await appears(w, 'Live: hello from the provider');
    await w.drained();
    assert.equal(
      w.app.logs.filter((l) => typeof l.path === 'string' && String(l.path).startsWith('/api/mail/sync')).length,
      0,
      'no sync route call',
    );
    const stored = await w.stored();
    assert.deepEqual(stored.inbox, w.providerInbox());
    assert.equal(stored.rows, stored.distinct);
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, w.published, 'every notification acknowledged');
  });

  it('duplicate, stale and out-of-order notifications create no duplicate rows and never move the checkpoint back', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    w.gmail.seed(ALICE, 5, { sentReplies: false });
    await w.syncAll();
    const staleHistoryId = String(w.gmail.historyId(ALICE));
    const before = await w.checkpoint();
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
    const snapshot = await w.sql(
      'select provider_message_id, label_ids, updated_at from mail_messages where account_id = ? order by 1',
      [w.accountId],
    );
    const syncsBefore = w.syncLogs().length;
    const providerBefore = w.gmail.requests.length;
    w.publish({ historyId: historyIds[0]! });
    w.publish({ historyId: '1' });
    await w.drained();
    assert.equal(w.syncLogs().length, syncsBefore, 'covered by the stored copy: acknowledged without a sync');
    const [state] = await w.sql<{ notified: boolean }>(
      'select coalesce(last_notification_at > last_synced_at, false) as notified from sync_states where account_id = ?',
      [w.accountId],
    );
    assert.equal(state!.notified, false, 'the account is not left catching up (nor counted in the backlog)');
    assert.equal(w.gmail.requests.length, providerBefore, 'no provider request');
    assert.equal(await w.checkpoint(), checkpoint);
    assert.deepEqual(
      await w.sql(
        'select provider_message_id, label_ids, updated_at from mail_messages where account_id = ? order by 1',
        [w.accountId],
      ),
      snapshot,
    );
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, w.published);
  });

  it('notifications that arrive together for one account become one job and one sync', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    for (let i = 0; i < 5; i++) w.gmail.addMessage(ALICE, { subject: `together ${i}` });
    const syncsBefore = w.syncLogs().length;
    for (let i = 0; i < 5; i++) w.publish();
    await w.drained();
    assert.equal(w.syncLogs().length - syncsBefore, 1, 'five notifications, one sync');
    const batches = w.app.logs
      .filter((l) => l.msg === 'notification batch taken in')
      .map((l) => [l.notifications, l.accounts]);
    assert.deepEqual(batches, [[5, 1]], 'one batch of five notifications for one account');
    assert.equal((await w.stored()).rows, 5);
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 5);
    const state = await w.syncState();
    assert.ok(
      state!.last_notification_at && Date.now() - new Date(state!.last_notification_at).getTime() < 60_000,
      'the last notification time is stored',
    );
  });

  it('a notification that arrives while the sync route runs waits its turn: the job tries again, nothing lost, no overlap', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    w.gmail.addMessage(ALICE, { subject: 'during the route sync' });
    w.gmail.setLatency(1_000);
    const route = w.browser.fetch('/api/mail/sync', { method: 'POST', headers: csrfHeaders(w.csrfToken, WEB_ORIGIN) });
    await waitFor(async () => (await w.syncState())?.lease_owner != null, 'the route sync to hold the lease');
    const added = w.gmail.addMessage(ALICE, { subject: 'while the route syncs' });
    w.publish();
    await waitFor(() => jobLines(w, 'busy').length > 0, 'the job to find the account busy');
    assert.equal((await route).status, 200);
    w.gmail.setLatency(0);
    await waitFor(async () => (await w.stored()).inbox.some((r) => r.startsWith(added.id)), 'the deferred job synced');
    await w.drained();
    const s = await w.stored();
    assert.deepEqual(s.inbox, w.providerInbox());
    assert.equal(s.rows, s.distinct);
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1);
  });

  it('a notification is acknowledged only once its job is stored: when the job engine cannot store it, it comes back', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    const lift = await w.refuseInserts('pgboss.job', "new.name = 'mail-sync'");
    const added = w.gmail.addMessage(ALICE, { subject: 'Stored job first' });
    w.publish();
    await waitFor(
      () => w.app.logs.some((l) => l.msg === 'could not store a sync job for a notification; it comes back later'),
      'the refused job',
    );
    let stats = w.pubsub.stats(SUBSCRIPTION);
    assert.equal(stats.acked, 0, 'not acknowledged');
    assert.equal(stats.leased + stats.available, 1, 'still in the subscription');
    await lift();
    await waitFor(
      async () => (await w.stored()).inbox.some((r) => r.startsWith(added.id)),
      'the redelivered notification to sync the message',
      15_000,
    );
    await w.drained();
    stats = w.pubsub.stats(SUBSCRIPTION);
    assert.equal(stats.acked, 1);
    assert.ok(stats.deliveries >= 2, 'delivered again after the refused attempt');
  });

  it('a sync that fails at its commit is retried by the job engine with backoff; the account row says so until it succeeds', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    const lift = await w.refuseInserts('mail_messages');
    const added = w.gmail.addMessage(ALICE, { subject: 'Commit fails first' });
    w.publish();
    await waitFor(
      () => w.app.logs.some((l) => l.msg === 'mail sync job failed; retrying with backoff'),
      'the failed job',
    );
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1, 'the notification did its work: the job is stored');
    const failing = await w.syncState();
    assert.equal(failing!.last_error_code, 'INTERNAL_ERROR');
    assert.ok(failing!.failing_since);
    assert.equal((await w.stored()).rows, 0);
    await lift();
    await waitFor(
      async () => (await w.stored()).inbox.some((r) => r.startsWith(added.id)),
      'the retried job to sync the message',
      15_000,
    );
    await w.idle();
    const healed = await w.syncState();
    assert.equal(healed!.last_error_code, null, 'cleared by the sync that succeeded');
    assert.equal((await w.stored()).rows, 1);
  });

  it('a job that fails past its retries is dead-lettered visibly, never dropped; the quiet sweep asks again later', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    const lift = await w.refuseInserts('mail_messages');
    const added = w.gmail.addMessage(ALICE, { subject: 'Refused until the sweep' });
    w.publish();
    await waitFor(
      () =>
        w.app.logs.some(
          (l) => l.msg === 'mail sync job dead-lettered after its retries; the quiet sweep will ask again',
        ),
      'the job to be dead-lettered',
      30_000,
    );
    const state = await w.syncState();
    assert.equal(state!.last_error_code, 'INTERNAL_ERROR');
    assert.ok(state!.dead_lettered_at, "the account's state says so");
    await waitFor(
      async () =>
        (await w.app.container.liveInbox.engine.count('mail-sync-dead-letter', [
          'created',
          'active',
          'retry',
          'completed',
          'failed',
        ])) === 1,
      'the job kept in the dead-letter queue',
    );
    assert.equal(
      await w.app.container.liveInbox.engine.count('mail-sync', ['created', 'retry', 'active']),
      0,
      'not retried forever',
    );

    await lift();
    await w.sql(
      `update sync_states set last_synced_at = now() - interval '7 hours', last_notification_at = now() - interval '7 hours' where account_id = ?`,
      [w.accountId],
    );
    const sweep = await w.app.container.liveInbox.scheduled['quiet-sweep']();
    assert.deepEqual(sweep.stale, [w.accountId]);
    await waitFor(
      async () => (await w.stored()).inbox.some((r) => r.startsWith(added.id)),
      'the sweep job to store the message',
    );
    await w.idle();
    const healed = await w.syncState();
    assert.equal(healed!.dead_lettered_at, null);
  });

  it('a backlog of 1,000 records survives a quota answer and the route taking the lease half-way: completed with no further notification', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    for (let i = 0; i < 1_000; i++) w.gmail.addMessage(ALICE, { subject: `backlog ${i}` });
    w.gmail.injectFault({
      endpoint: 'messages.get',
      status: 429,
      reason: 'userRateLimitExceeded',
      retryAfterSeconds: 1,
      afterCalls: 230,
    });
    w.publish(); // the one notification of the whole backlog
    await waitFor(async () => (await w.stored()).rows >= 400, 'the jobs to be half-way', 30_000);
    // The user presses Sync meanwhile: the route and the jobs share the lease, in turn.
    let pressed = 0;
    for (let i = 0; i < 30 && pressed < 2; i++) {
      const res = await w.browser.fetch('/api/mail/sync', {
        method: 'POST',
        headers: csrfHeaders(w.csrfToken, WEB_ORIGIN),
      });
      if (res.status === 200) pressed++;
      await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor(async () => (await w.stored()).rows === 1_000, 'the whole backlog stored, by the jobs alone', 60_000);
    await w.idle();
    assert.equal(w.published, 1, 'no further notification was needed');
    assert.ok(jobLines(w, 'quota').length >= 1, 'the quota answer was waited out');
    const s = await w.stored();
    assert.equal(s.rows, s.distinct);
    assert.deepEqual(s.inbox, w.providerInbox());
    assert.equal(await w.checkpoint(), BigInt(w.gmail.historyId(ALICE)));
  });

  it('a sign-in backfills the whole inbox in the background within the provider quota: no call refused, no sync route call', async (t) => {
    // The 2026 per-user quota, its minute scaled down to 2 s (the same in the service's ledger and the stand-in).
    const w = await startLiveWorld(t, {
      forward: false,
      env: { GMAIL_USER_UNITS_PER_MINUTE: '2000' },
      mailQuota: { windowMs: 2_000, skewMs: LOADED_SKEW_MS },
    });
    w.gmail.setQuota({ unitsPerWindow: 2_000, windowMs: 2_000, profile: '2026' });
    w.gmail.seed(BOB.email, 180, { sentReplies: false });
    w.gmail.resetCounters();
    const bob = await w.signInAs(BOB);
    await waitFor(
      async () => (await w.stored(bob.accountId)).rows === 180,
      'the backfill to store the whole inbox',
      30_000,
    );
    assert.equal(w.gmail.calls['quota-refused'] ?? 0, 0, 'the provider never refused a call');
    assert.deepEqual((await w.stored(bob.accountId)).inbox, w.providerInbox(BOB.email));
    assert.equal(
      w.app.logs.filter((l) => typeof l.path === 'string' && String(l.path).startsWith('/api/mail/sync')).length,
      0,
      'no sync route call',
    );
  });

  it('provider quota: the job waits the provider Retry-After without counting a failure, then syncs', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    w.gmail.injectFault({
      endpoint: 'history.list',
      status: 429,
      reason: 'userRateLimitExceeded',
      retryAfterSeconds: 1,
    });
    w.gmail.addMessage(ALICE, { subject: 'After the quota' });
    w.publish();
    await appears(w, 'After the quota', 15_000);
    await w.drained();
    assert.equal(jobLines(w, 'quota').length, 1, 'one job met the quota and handed on');
    assert.ok(!w.app.logs.some((l) => l.msg === 'mail sync job failed; retrying with backoff'), 'not a failure');
    assert.equal(
      w.pubsub.stats(SUBSCRIPTION).deliveries,
      1,
      'the notification was not redelivered: the job carried it',
    );
  });

  it('history gone: the job falls back to a full resync that reconciles the store', async (t) => {
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

  it('two instances take in the same subscription and work the same queue: every change lands once, every message is acknowledged', async (t) => {
    const w = await startLiveWorld(t);
    const other = await w.instance();
    const bob = await w.signInAs(BOB);
    w.gmail.seed(ALICE, 4, { sentReplies: false });
    w.gmail.seed(BOB.email, 4, { sentReplies: false });
    w.gmail.setLatency(10); // syncs take a moment, so the instances overlap
    for (let i = 0; i < 12; i++) {
      const email = i % 2 ? BOB.email : ALICE;
      const m = w.gmail.addMessage(email, { subject: `multi ${i}` });
      if (i % 3 === 0) w.gmail.setRead(email, m.id, true);
      if (i % 4 === 1) w.gmail.archive(email, w.gmail.inbox(email)[2]!.id);
      if (i % 5 === 2) w.publish({ emailAddress: email }); // and a duplicate now and then
    }
    await w.drained(30_000);
    for (const [id, email] of [
      [w.accountId, ALICE],
      [bob.accountId, BOB.email],
    ] as const) {
      const s = await w.stored(id);
      assert.deepEqual(s.inbox, w.providerInbox(email), `${email}: stored inbox equals the provider's`);
      assert.equal(s.rows, s.distinct, `${email}: no duplicate rows`);
      assert.equal(await w.checkpoint(id), BigInt(w.gmail.historyId(email)), `${email}: caught up`);
    }
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, w.published);
    const overlapping = [...w.app.logs, ...other.logs].filter(
      (l) => l.msg === 'mail sync failed' && l.code === 'SYNC_FAILED',
    );
    assert.deepEqual(overlapping, [], 'no sync lost its lease to another');
    await other.close();
  });

  it('an instance that stops half-way through a big backfill leaves a job behind; another instance finishes it', async (t) => {
    const w = await startLiveWorld(t, { forward: false, work: false });
    const bob = await w.signInAs(BOB); // the backfill job is stored; nobody works yet
    w.gmail.seed(BOB.email, 600, { sentReplies: false });
    w.gmail.setLatency(20);
    const first = await w.instance({ intake: false });
    await waitFor(
      async () => (await w.stored(bob.accountId)).rows >= 100,
      'the first instance to be under way',
      20_000,
    );
    await first.close(); // a graceful stop: the job in flight commits and queues its continuation
    const part = (await w.stored(bob.accountId)).rows;
    assert.ok(part < 600, `stopped half-way (${part} stored)`);
    assert.ok(
      (await w.app.container.liveInbox.engine.count('mail-sync', ['created', 'retry'], bob.accountId)) >= 1,
      'a job waits for the account',
    );
    const second = await w.instance({ intake: false });
    await waitFor(
      async () => (await w.stored(bob.accountId)).rows === 600,
      'the second instance to finish the backfill',
      30_000,
    );
    const s = await w.stored(bob.accountId);
    assert.equal(s.rows, s.distinct);
    assert.deepEqual(s.inbox, w.providerInbox(BOB.email));
    await second.close();
  });

  it('the loop survives subscription errors: it logs, backs off and then delivers', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    w.pubsub.injectFault({ method: 'Pull', code: grpc.status.NOT_FOUND, details: 'Subscription does not exist' });
    w.gmail.addMessage(ALICE, { subject: 'After the queue hiccup' });
    w.publish();
    await appears(w, 'After the queue hiccup', 15_000);
    const failures = w.app.logs.filter((l) => l.msg === 'notification pull failed');
    assert.deepEqual(
      failures.map((l) => [l.code, l.retryInMs]),
      [[grpc.status.NOT_FOUND, 1000]],
      'logged, backed off',
    );
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1);
  });

  it('a waiting pull that ends at its deadline on an idle subscription is an empty pull, not an error', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    const config = {
      ...w.app.config,
      pubsub: {
        ...w.app.config.pubsub,
        subscription: SUBSCRIPTION,
        emulatorHost: w.pubsub.host,
        projectId: 'test-project',
      },
    };
    const queue = createNotificationQueue(config);
    t.after(() => queue.close());
    w.pubsub.injectFault({ method: 'Pull', code: grpc.status.DEADLINE_EXCEEDED });
    assert.deepEqual(await queue.pull(10), []);
    w.pubsub.injectFault({ method: 'Pull', code: grpc.status.UNAVAILABLE });
    await assert.rejects(
      queue.pull(10),
      (err: { code?: number }) => err.code === grpc.status.UNAVAILABLE,
      'other errors still fail the pull',
    );
    w.publish();
    const [m] = await queue.pull(10);
    assert.deepEqual(JSON.parse(m!.data.toString('utf8')).emailAddress, ALICE);
  });

  it('with an emulator, start-up creates the topic and subscription when missing (and leaves existing ones alone)', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    const config = {
      ...w.app.config,
      pubsub: {
        projectId: 'test-project',
        topic: 'projects/test-project/topics/fresh',
        subscription: 'fresh-sub',
        emulatorHost: w.pubsub.host,
      },
    };
    await ensureEmulatorSubscription(config);
    assert.deepEqual(w.pubsub.stats('fresh-sub'), { available: 0, leased: 0, acked: 0, deliveries: 0 });
    w.pubsub.publish('fresh', { emailAddress: ALICE, historyId: '1' });
    await ensureEmulatorSubscription(config);
    assert.equal(w.pubsub.stats('fresh-sub').available, 1, 'the existing subscription was kept, with its message');
  });

  it('a database outage: the intake hands the notification back and recovers; /health tells the truth throughout', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    const healthy = await fetch(`${w.app.url}/health`);
    assert.equal(healthy.status, 200);
    const outage = await cutDatabase(w.app.databaseUrl);
    let restored = false;
    t.after(() => (restored ? undefined : outage.restore()));
    w.gmail.addMessage(ALICE, { subject: 'During the outage' });
    w.publish();
    await waitFor(
      () => w.app.logs.some((l) => l.msg === 'could not store a sync job for a notification; it comes back later'),
      'the intake to meet the outage',
    );
    const down = await fetch(`${w.app.url}/health`);
    assert.equal(down.status, 503);
    assert.equal((await down.json()).database, 'down');
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 0, 'nothing acknowledged while no job can be stored');
    await outage.restore();
    restored = true;
    await waitFor(async () => (await fetch(`${w.app.url}/health`)).status === 200, '/health back to 200', 10_000, 250);
    await appears(w, 'During the outage', 20_000);
    await w.drained();
    assert.equal(w.pubsub.stats(SUBSCRIPTION).acked, 1);
  });

  it('an unreachable queue at start-up blocks neither the HTTP server nor shutdown', async (t) => {
    const w = await startLiveWorld(t, { emulatorHost: await deadHost() });
    const health = await fetch(`${w.app.url}/health`);
    assert.equal(health.status, 200, 'the server answers');
    const threads = await w.browser.fetch('/api/mail/threads');
    assert.equal(threads.status, 200);
    await waitFor(
      () => w.app.logs.filter((l) => l.msg === 'notification pull failed').length >= 2,
      'the intake to keep trying',
    );
    await w.app.close();
    assert.ok(
      w.app.logs.filter((l) => l.msg === 'notification pull failed').every((l) => typeof l.retryInMs === 'number'),
    );
  });

  it('stops on shutdown with nothing cut off: the running sync commits, nothing starts afterwards', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.syncAll();
    for (let i = 0; i < 3; i++) w.gmail.addMessage(ALICE, { subject: `in flight ${i}` });
    w.gmail.setLatency(150);
    w.gmail.resetCounters();
    w.publish();
    await waitFor(() => w.gmail.calls['history.list']! > 0, 'a sync in flight');
    // Shut down as the process does (stop accepting requests, stop the workers, close the
    // database); what the stopped service left behind is read before the test database goes.
    await w.app.stop();
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: w.app.databaseUrl });
    await client.connect();
    let leftBehind: { rows: number; leaseOwner: string | null };
    try {
      const { rows } = await client.query('select count(*)::int as n from mail_messages where account_id = $1', [
        w.accountId,
      ]);
      const { rows: lease } = await client.query('select lease_owner from sync_states where account_id = $1', [
        w.accountId,
      ]);
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
