/**
 * One sync job is settled the moment it ends (issue 29), not when the slowest job of the
 * batch it was fetched in does: with one engine worker taking both accounts' jobs in one
 * batch, the fast account's job is completed while the slow one's still runs. And when
 * another account's job waits, a long sync makes way (the "someone is waiting" check in SQL).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QUEUES } from '../../../server/jobs/engine.ts';
import { ALICE, startLiveWorld, waitFor } from './live-harness.ts';

const BOB = { sub: 'user-bob', email: 'bob@example.com' };

describe('sync jobs: settlement and backoff', () => {
  it('completes a finished job while the slow job of its batch still runs', async (t) => {
    const w = await startLiveWorld(t, { intake: false, concurrency: { workers: 1, batch: 8 } });
    const bob = await w.signInAs(BOB);
    await w.idle();
    const slow = w.gmail.addMessage(ALICE, { subject: 'Slow to fetch' });
    w.gmail.addMessage(BOB.email, { subject: 'Quick to fetch' });
    w.gmail.injectFault({ endpoint: 'messages.get', status: 200, delayMs: 3_000, pathIncludes: slow.id, times: 1 });
    const { engine } = w.app.container.liveInbox;
    // Both jobs in one statement: the one worker fetches them as one batch.
    await engine.boss.insert(QUEUES.mailSync, [
      { data: { accountId: w.accountId, reason: 'notification' }, singletonKey: w.accountId },
      { data: { accountId: bob.accountId, reason: 'notification' }, singletonKey: bob.accountId },
    ]);
    const state = async (accountId: string) =>
      (
        await w.sql<{ state: string }>(
          `select state from pgboss.job where name = ? and singleton_key = ? order by created_on desc limit 1`,
          [QUEUES.mailSync, accountId],
        )
      )[0]?.state;
    await waitFor(async () => (await state(bob.accountId)) === 'completed', "bob's job completed");
    assert.equal(
      await state(w.accountId),
      'active',
      "alice's job (same batch) still runs: bob's was settled on its own",
    );
    await w.idle();
    assert.equal(await state(w.accountId), 'completed');
  });

  it('waits longer after each quota answer in a row (1 s, 2 s, 4 s, the provider asking 1 s), then syncs', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    await w.idle();
    w.gmail.injectFault({
      endpoint: 'history.list',
      status: 429,
      reason: 'userRateLimitExceeded',
      retryAfterSeconds: 1,
      times: 3,
    });
    const late = w.gmail.addMessage(ALICE, { subject: 'After three quota answers' });
    await w.app.container.liveInbox.engine.enqueueSync({ accountId: w.accountId, reason: 'notification' });
    await waitFor(
      async () => (await w.stored()).inbox.some((x) => x.startsWith(`${late.id}:`)),
      'stored after the quota answers',
      20_000,
    );
    const waits = await w.sql<{ streak: number; wait: number }>(
      `select (data->>'quotaStreak')::int as streak, extract(epoch from start_after - created_on)::float8 as wait from pgboss.job
        where name = ? and singleton_key = ? and data->>'reason' = 'quota' order by created_on`,
      [QUEUES.mailSync, w.accountId],
    );
    assert.deepEqual(
      waits.map((x) => x.streak),
      [1, 2, 3],
    );
    waits.forEach((x, i) => assert.ok(x.wait >= 2 ** i - 0.1, `wait ${i + 1}: ${x.wait} s, at least ${2 ** i} s`));
  });

  it('a request for an account whose job waits to be retried is that retry: brought forward by a notification, never a job beside it', async (t) => {
    // A long first backoff, so the retry is seen waiting.
    const w = await startLiveWorld(t, { intake: false, retry: { limit: 2, delaySeconds: 30 } });
    await w.idle();
    const { engine } = w.app.container.liveInbox;
    const jobs = async () =>
      w.sql<{ state: string; retry_count: number; start_after_s: number }>(
        `select state, retry_count, extract(epoch from start_after - now())::float8 as start_after_s from pgboss.job where name = ? and singleton_key = ? and state in ('created', 'retry', 'active') order by created_on`,
        [QUEUES.mailSync, w.accountId],
      );
    w.gmail.injectFault({ endpoint: 'history.list', status: 500, times: 1 });
    const mail = w.gmail.addMessage(ALICE, { subject: 'After a failure' });
    await engine.enqueueSync({ accountId: w.accountId, reason: 'notification' });
    await waitFor(async () => (await jobs()).some((j) => j.state === 'retry'), 'the failed job to wait for its retry');
    assert.ok((await jobs())[0]!.start_after_s > 20, 'its backoff is long');
    // The sweep, a job's continuation, a paced wait: covered by the retry, no job of their own.
    for (const reason of ['sweep', 'continue', 'paced'] as const)
      assert.equal(await engine.enqueueSync({ accountId: w.accountId, reason }), false, reason);
    assert.deepEqual(
      (await jobs()).map((j) => j.state),
      ['retry'],
    );
    // A notification must not wait 30 s: the retry itself starts now, as its second attempt.
    assert.equal(await engine.enqueueSync({ accountId: w.accountId, reason: 'notification' }), false);
    await waitFor(
      async () => (await w.stored()).inbox.some((x) => x.startsWith(`${mail.id}:`)),
      'the mail stored by the retry brought forward',
    );
    await w.idle();
    const [ran] = await w.sql<{ retry_count: number }>(
      `select retry_count from pgboss.job where name = ? and singleton_key = ? and state = 'completed' order by completed_on desc limit 1`,
      [QUEUES.mailSync, w.accountId],
    );
    assert.equal(ran!.retry_count, 1, 'the retry ran (its count kept), not a new job');
  });

  it('a job made while the last one ran, which then failed, merges into that retry instead of running beside it', async (t) => {
    const w = await startLiveWorld(t, { intake: false, retry: { limit: 2, delaySeconds: 600 } });
    await w.idle();
    const { engine } = w.app.container.liveInbox;
    // The first attempt runs a while (its history read answers late), then fails: all three new messages fail, as in an outage.
    w.gmail.injectFault({ endpoint: 'history.list', status: 200, delayMs: 1_500, times: 1 });
    w.gmail.injectFault({ endpoint: 'messages.get', status: 500, times: Infinity });
    for (let i = 0; i < 3; i++) w.gmail.addMessage(ALICE, { subject: `Failing ${i}` });
    assert.equal(await engine.enqueueSync({ accountId: w.accountId, reason: 'notification' }), true);
    const jobs = (state: string) =>
      w.sql<{ retry_count: number; output: { outcome?: string } | null }>(
        `select retry_count, output from pgboss.job where name = ? and singleton_key = ? and state = ? order by created_on`,
        [QUEUES.mailSync, w.accountId, state],
      );
    await waitFor(async () => (await jobs('active')).length === 1, 'the first attempt running');
    const before = (await jobs('completed')).length; // the sign-in's backfill
    assert.equal(
      await engine.enqueueSync({ accountId: w.accountId, reason: 'sweep' }),
      true,
      'a job made beside the running one',
    );
    await waitFor(async () => (await jobs('completed')).length > before, 'the job made meanwhile settled');
    assert.deepEqual(
      (await jobs('completed')).slice(before).map((j) => j.output?.outcome),
      ['merged'],
      'it merged: nothing ran beside the retry',
    );
    assert.equal((await jobs('retry')).length, 1, 'the retry waits its backoff');
    // A notification brings the retry forward (enqueueSync's own rule), and it runs as the retry it is.
    assert.equal(await engine.enqueueSync({ accountId: w.accountId, reason: 'notification' }), false);
    await waitFor(async () => (await jobs('completed')).some((j) => j.retry_count === 1), 'the retry run');
    const dead = w.app.logs.filter(
      (l) => l.accountId === w.accountId && typeof l.msg === 'string' && /dead-lettered/.test(l.msg),
    );
    assert.deepEqual(dead, [], 'nothing dead-lettered');
    w.gmail.clearFaults();
  });

  it('dead-letters a job only past its real retry limit, however many notifications come meanwhile, and says so', async (t) => {
    const w = await startLiveWorld(t, { intake: false, retry: { limit: 2, delaySeconds: 1 } });
    await w.idle();
    const { engine } = w.app.container.liveInbox;
    w.gmail.injectFault({ endpoint: 'history.list', status: 500, times: Infinity });
    w.gmail.addMessage(ALICE, { subject: 'Never fetched' });
    const line = (msg: string) => w.app.logs.filter((l) => l.accountId === w.accountId && l.msg === msg);
    const dead = 'mail sync job dead-lettered after its retries; the quiet sweep will ask again';
    while (!line(dead).length) {
      await engine.enqueueSync({ accountId: w.accountId, reason: 'notification' });
      await new Promise((r) => setTimeout(r, 100));
    }
    // The job's own lines: a notification after its dead letter makes a new job, whose lines come after.
    const mine = w.app.logs.filter((l) => l.accountId === w.accountId);
    const deadAt = mine.findIndex((l) => l.msg === dead);
    assert.deepEqual(
      mine
        .slice(0, deadAt)
        .filter((l) => l.msg === 'mail sync job failed; retrying with backoff')
        .map((l) => l.attempt),
      [1, 2],
    );
    assert.deepEqual(
      line(dead).map((l) => l.attempt),
      [3],
    );
    assert.equal(
      line(
        'mail sync job dead-lettered before its retry limit: its retry could not be queued; the quiet sweep will ask again',
      ).length,
      0,
    );
    w.gmail.clearFaults();
  });

  it('an attempt that lost its job to another worker and then fails records no failure on the account', async (t) => {
    const w = await startLiveWorld(t, {
      intake: false,
      retry: { limit: 2, delaySeconds: 30 },
      concurrency: { workers: 2, batch: 1 },
    });
    await w.idle();
    const { engine } = w.app.container.liveInbox;
    // The first attempt's history read hangs, then fails; meanwhile its job is handed on.
    const historyReads = w.gmail.calls['history.list'] ?? 0;
    w.gmail.injectFault({ endpoint: 'history.list', status: 500, delayMs: 4_000, times: 1 });
    const mail = w.gmail.addMessage(ALICE, { subject: 'Stored by the job handed on' });
    await engine.enqueueSync({ accountId: w.accountId, reason: 'notification' });
    const active = await waitFor(
      async () => (await engine.boss.findJobs(QUEUES.mailSync, { key: w.accountId })).find((j) => j.state === 'active'),
      'the first attempt running',
    );
    // Its history read has arrived and hangs: the fault is its own, not the attempt on the other worker's.
    await waitFor(
      () => (w.gmail.calls['history.list'] ?? 0) > historyReads,
      "the first attempt's history read arriving",
    );
    // As the supervisor does with a stalled worker's job (its heartbeat lapsed): failed, to be retried; its lease lapses too.
    await engine.boss.fail(QUEUES.mailSync, active!.id, { message: 'heartbeat lapsed' });
    await w.sql(
      `update sync_states set lease_owner = 'lapsed', lease_until = now() - interval '1 second' where account_id = ?`,
      [w.accountId],
    );
    await engine.enqueueSync({ accountId: w.accountId, reason: 'notification' });
    await waitFor(
      async () => (await w.stored()).inbox.some((x) => x.startsWith(`${mail.id}:`)),
      'the mail stored by the retry on the other worker',
    );
    const failedLine = () => w.app.logs.filter((l) => l.accountId === w.accountId && l.msg === 'mail sync failed');
    assert.equal(failedLine().length, 0, 'the retry committed while the first attempt still hung');
    await waitFor(() => failedLine().length === 1, 'the first attempt failing late');
    await w.idle();
    await waitFor(
      () =>
        w.app.logs.some(
          (l) =>
            l.accountId === w.accountId &&
            l.msg === 'a job attempt that had lost its claim failed; its job was handed on',
        ),
      'the stale failure said as such',
    );
    const row = await w.syncState();
    assert.deepEqual(
      { code: row!.last_error_code, since: row!.failing_since },
      { code: null, since: null },
      'the account does not say its sync is failing: its job succeeded elsewhere',
    );
    assert.equal(
      w.app.logs.filter((l) => l.accountId === w.accountId && l.msg === 'mail sync job failed; retrying with backoff')
        .length,
      0,
    );
  });
});
