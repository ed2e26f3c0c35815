/**
 * The mail watch's lifecycle and the quiet-account sweep, through the app's own scheduled
 * jobs (watch renewal, quiet sweep): registered at sign-in and after a reconnect
 * (PUBSUB_TOPIC, label INBOX), renewed daily, stopped at once by disconnect and deletion (the
 * stand-in's records), never left behind by a renewal racing a disconnect, and the sweep's
 * sync jobs — watch expired or failed to renew, no notification for longer than the
 * threshold, never synced at all: a cheap history sync from the checkpoint, a listing only
 * when the provider no longer has that history.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../../../harness/wait.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders } from '../../helpers/providers.ts';
import { ALICE, startLiveWorld, TOPIC_NAME, type LiveWorld } from './live-harness.ts';

const DAY_MS = 24 * 3600_000;

async function watchState(w: LiveWorld, accountId = w.accountId) {
  const row = await w.syncState(accountId);
  const date = (v: string | null) => (v === null ? null : new Date(v));
  return { watch_expires_at: date(row!.watch_expires_at), watch_renewed_at: date(row!.watch_renewed_at) };
}

const watchCalls = (w: LiveWorld, email = ALICE) => w.gmail.watches(email).map((r) => r.kind);

/** Provider-side changes that no notification reports (the watch is gone or the queue lost them). */
function unnotifiedChanges(w: LiveWorld) {
  w.forward = false;
  const inbox = w.gmail.inbox(ALICE);
  w.gmail.archive(ALICE, inbox[0]!.id);
  w.gmail.deleteMessage(ALICE, inbox[1]!.id);
  w.gmail.setRead(ALICE, inbox[2]!.id, !inbox[2]!.unread);
  return w.gmail.addMessage(ALICE, { subject: 'Missed by every notification' });
}

async function assertConverged(w: LiveWorld) {
  await w.idle();
  const stored = await w.stored();
  assert.deepEqual(stored.inbox, w.providerInbox(), 'stored inbox equals the provider inbox');
  assert.equal(stored.rows, stored.distinct, 'no duplicate rows');
}

describe('mail watch and safety sweep', () => {
  it('registers the watch right after sign-in, on PUBSUB_TOPIC for INBOX, and stores its state', async (t) => {
    const before = Date.now();
    const w = await startLiveWorld(t, { intake: false });
    assert.deepEqual(
      w.gmail.watches(ALICE).map(({ at: _at, ...r }) => r),
      [{ kind: 'watch', topicName: TOPIC_NAME, labelIds: ['INBOX'], labelFilterBehavior: 'include' }],
    );
    const state = await watchState(w);
    assert.ok(state.watch_expires_at!.getTime() > before + 6 * DAY_MS, 'the provider expiry is stored');
    assert.ok(state.watch_renewed_at!.getTime() >= before - 1000);
  });

  it('renews every watch daily, well before its expiry, and not before it is due', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    let round = await w.maintenance();
    assert.equal(round.renewed, 0, 'renewed at sign-in: not due');
    assert.deepEqual(watchCalls(w), ['watch']);

    await w.sql(`update sync_states set watch_renewed_at = now() - interval '25 hours' where account_id = ?`, [
      w.accountId,
    ]);
    round = await w.maintenance();
    assert.equal(round.renewed, 1);
    assert.deepEqual(watchCalls(w), ['watch', 'watch']);
    const renewed = await watchState(w);
    assert.ok(Date.now() - renewed.watch_renewed_at!.getTime() < 60_000, 'renewal time stored');
    assert.ok(renewed.watch_expires_at!.getTime() > Date.now() + 6 * DAY_MS, 'new expiry stored');

    // A watch that would lapse within a day is renewed even if renewed recently (a short provider expiry).
    await w.sql(`update sync_states set watch_expires_at = now() + interval '2 hours' where account_id = ?`, [
      w.accountId,
    ]);
    round = await w.maintenance();
    assert.equal(round.renewed, 1);
    assert.deepEqual(watchCalls(w), ['watch', 'watch', 'watch']);
    assert.deepEqual(round.stale, [], 'a live watch is no reason to resync');
  });

  it('disconnect stops the watch at once (users.stop); the service stops syncing the account; a reconnect registers it again', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    const res = await w.browser.fetch('/auth/provider/disconnect', {
      method: 'POST',
      headers: csrfHeaders(w.csrfToken, WEB_ORIGIN),
    });
    assert.equal(res.status, 204);
    assert.deepEqual(watchCalls(w), ['watch', 'stop'], 'stopped at disconnect, not left to expire');
    assert.equal((await watchState(w)).watch_expires_at, null);
    const published = w.published;
    w.gmail.addMessage(ALICE, { subject: 'After the disconnect' });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(w.published, published, 'the provider sends no more notifications');

    // Neither renewed nor swept while disconnected, however old its state.
    await w.sql(
      `update sync_states set watch_renewed_at = now() - interval '3 days', last_synced_at = now() - interval '3 days',
         last_notification_at = now() - interval '3 days', updated_at = now() - interval '3 days', history_id = 1 where account_id = ?`,
      [w.accountId],
    );
    const round = await w.maintenance();
    assert.equal(round.renewed, 0);
    assert.deepEqual(round.stale, []);
    assert.deepEqual(watchCalls(w), ['watch', 'stop']);

    const again = await w.signInAs({ sub: 'user-alice', email: ALICE });
    assert.equal(again.accountId, w.accountId);
    assert.deepEqual(watchCalls(w), ['watch', 'stop', 'watch'], 'registered again after the reconnect');
    assert.ok((await watchState(w)).watch_expires_at!.getTime() > Date.now() + 6 * DAY_MS);
  });

  it('a renewal racing a disconnect leaves no watch behind: the watch it made is stopped again', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    await w.sql(`update sync_states set watch_renewed_at = now() - interval '25 hours' where account_id = ?`, [
      w.accountId,
    ]);
    // Held back long enough for the disconnect to be done on a loaded machine.
    w.gmail.injectFault({ endpoint: 'watch', status: 200, delayMs: 2_000 });
    const asked = w.gmail.requests.length;
    let renewed = false;
    const renewal = w.maintenance().finally(() => (renewed = true)); // its watch call answers after the disconnect is done
    // The disconnect comes once the provider has the renewal's watch call, not after a guess at how long that takes.
    await eventually(
      async () => renewed || w.gmail.requests.slice(asked).some((r) => r.endpoint === 'watch'),
      30_000,
      5,
    );
    assert.equal(renewed, false, 'the renewal waits for its late watch answer');
    const res = await w.browser.fetch('/auth/provider/disconnect', {
      method: 'POST',
      headers: csrfHeaders(w.csrfToken, WEB_ORIGIN),
    });
    assert.equal(res.status, 204);
    await renewal;
    assert.equal(
      (await watchState(w)).watch_expires_at,
      null,
      'the late renewal did not record a watch for a disconnected account',
    );
    assert.ok(
      w.app.logs.some(
        (l) =>
          String(l.msg).startsWith('mail watch made during a disconnect') ||
          l.msg === 'stopping a watch made during a disconnect failed',
      ),
    );
    const published = w.published;
    w.gmail.addMessage(ALICE, { subject: 'After the race' });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(w.published, published, 'no watch left at the provider: no notification');
  });

  it('account deletion stops the watch at once', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    const res = await w.browser.fetch('/auth/account', {
      method: 'DELETE',
      json: { confirm: true },
      headers: csrfHeaders(w.csrfToken, WEB_ORIGIN),
    });
    assert.equal(res.status, 204);
    assert.deepEqual(watchCalls(w), ['watch', 'stop']);
    assert.equal(await w.app.account({ id: w.accountId }), null);
  });

  it('an expired watch: the sweep syncs from the checkpoint (history, no listing), once, and the watch is renewed', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    w.gmail.seed(ALICE, 12, { sentReplies: false });
    await w.syncAll();
    unnotifiedChanges(w);
    await w.sql(`update sync_states set watch_expires_at = now() - interval '1 minute' where account_id = ?`, [
      w.accountId,
    ]);
    w.gmail.resetCounters();
    let round = await w.maintenance();
    assert.deepEqual(round.stale, [w.accountId]);
    assert.equal(round.queued, 1);
    await assertConverged(w);
    assert.equal(w.gmail.calls['messages.list'], 0, 'no listing: the history since the checkpoint has every change');
    assert.ok(w.gmail.calls['history.list']! >= 1);
    assert.equal(round.renewed, 1, 'the lapsed watch is registered again');
    assert.deepEqual(watchCalls(w), ['watch', 'watch']);

    w.gmail.resetCounters();
    round = await w.maintenance();
    assert.deepEqual(round.stale, [], 'no sweep once the watch is back');
    assert.equal(w.gmail.calls['history.list'], 0);
  });

  it('a quiet night on an inbox above any listing cap: the sweep costs one history call, not a re-walk', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    // A user whose mailbox is full before they sign in (the stand-in's seed writes no history).
    const carol = { sub: 'user-carol', email: 'carol@example.com' };
    w.gmail.seed(carol.email, 2_600, { sentReplies: false });
    const { accountId } = await w.signInAs(carol);
    await w.idle(60_000); // the sign-in backfill
    assert.equal((await w.stored(accountId)).rows, 2_600);
    await w.sql(
      `update sync_states set last_synced_at = now() - interval '9 hours', last_notification_at = now() - interval '9 hours' where account_id = ?`,
      [accountId],
    );
    w.gmail.resetCounters();
    const round = await w.maintenance();
    assert.deepEqual(round.stale, [accountId]);
    await w.idle();
    assert.deepEqual(
      {
        list: w.gmail.calls['messages.list'],
        history: w.gmail.calls['history.list'],
        get: w.gmail.calls['messages.get'],
      },
      { list: 0, history: 1, get: 0 },
    );
  });

  it('history gone when the sweep comes: the listing resumes from its stored page and never restarts from the top', async (t) => {
    const w = await startLiveWorld(t, { intake: false, work: false });
    // Above what one call lists (4 pages of 500 ids): every message unread, so the unread ids alone take two calls.
    w.gmail.seed(ALICE, 2_600, { sentReplies: false, readRatio: 0 });
    while ((await w.app.container.services.sync.syncAccount(w.accountId)).hasMore); // 2,600 stored, checkpoint set
    unnotifiedChanges(w);
    w.gmail.expireHistory(ALICE);
    // The route takes one bounded call: the expired history starts a listing (its first pages of ids, cursor kept).
    const res = await w.browser.fetch('/api/mail/sync', {
      method: 'POST',
      headers: csrfHeaders(w.csrfToken, WEB_ORIGIN),
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).hasMore, true);
    const cursor = await w.syncState();
    assert.equal(cursor!.full_sync_active, true);
    w.gmail.resetCounters(); // before any worker runs: its first listing call is the one checked
    const other = await w.instance({ intake: false }); // workers on: the sweep's job (or the sign-in's, still queued) resumes the listing
    await w.sql(
      `update sync_states set last_synced_at = now() - interval '9 hours', last_notification_at = null, watch_expires_at = now() - interval '1 minute' where account_id = ?`,
      [w.accountId],
    );
    await other.container.liveInbox.scheduled['quiet-sweep']();
    await w.idle();
    const pages = w.gmail.requests.filter((r) => r.endpoint === 'messages.list');
    assert.ok(pages.length >= 1);
    assert.ok(
      typeof pages[0]!.query.pageToken === 'string',
      `the first listing call after the sweep continues from the stored page token: ${JSON.stringify(pages.slice(0, 3).map((p) => p.query))} ${JSON.stringify(cursor)}`,
    );
    await assertConverged(w);
    await other.close();
  });

  it('a listing the sync route began and the client left is resumed by the sweep once no job has moved it for 10 minutes', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    w.gmail.seed(ALICE, 2_600, { sentReplies: false, readRatio: 0 }); // above what one listing call reads
    await w.idle(60_000); // the sign-in's backfill
    unnotifiedChanges(w);
    w.gmail.expireHistory(ALICE);
    const res = await w.browser.fetch('/api/mail/sync', {
      method: 'POST',
      headers: csrfHeaders(w.csrfToken, WEB_ORIGIN),
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).hasMore, true, 'the route began a listing and stopped after one bounded call');
    // The account is otherwise fresh: heard from a minute ago, watch valid.
    await w.sql(
      `update sync_states set last_notification_at = now() - interval '1 minute', watch_expires_at = now() + interval '3 days' where account_id = ?`,
      [w.accountId],
    );
    assert.deepEqual((await w.maintenance()).stale, [], 'not while the listing moved recently');
    await w.sql(`update sync_states set last_synced_at = now() - interval '11 minutes' where account_id = ?`, [
      w.accountId,
    ]);
    w.gmail.resetCounters();
    const round = await w.maintenance();
    assert.deepEqual(round.stale, [w.accountId]);
    await assertConverged(w);
    const pages = w.gmail.requests.filter((r) => r.endpoint === 'messages.list');
    assert.ok(pages.length >= 1 && typeof pages[0]!.query.pageToken === 'string', 'resumed from the stored page token');
    const cursor = await w.syncState();
    assert.equal(cursor!.full_sync_active, false, 'the listing finished');
  });

  it('a renewal that fails is logged and retried after its delay, not every round; a watch that lapsed meanwhile still gets its full resync', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    w.gmail.seed(ALICE, 6, { sentReplies: false });
    await w.syncAll();
    await w.sql(
      `update sync_states set watch_renewed_at = now() - interval '8 days', watch_expires_at = now() - interval '1 day' where account_id = ?`,
      [w.accountId],
    );
    unnotifiedChanges(w);
    w.gmail.injectFault({ endpoint: 'watch', status: 503 });
    let round = await w.maintenance();
    assert.deepEqual(round.failed, [w.accountId]);
    assert.equal(round.renewed, 0);
    assert.ok(w.app.logs.some((l) => l.msg === 'mail watch renewal failed' && l.accountId === w.accountId));
    assert.deepEqual(round.stale, [w.accountId]);
    await assertConverged(w);
    const backoff = (await w.syncState())!;
    const wait = (new Date(backoff.watch_retry_at!).getTime() - Date.now()) / 1000;
    assert.equal(backoff.watch_failures, 1);
    assert.ok(wait > 500 && wait <= 600, `the next try waits about 10 minutes (${wait} s)`);
    round = await w.maintenance();
    assert.deepEqual([round.renewed, round.failed], [0, []], 'not tried again before its delay');
    // The delay passes.
    await w.sql("update sync_states set watch_retry_at = now() - interval '1 second' where account_id = ?", [
      w.accountId,
    ]);
    round = await w.maintenance();
    assert.equal(round.renewed, 1, 'retried and renewed');
    assert.deepEqual(round.failed, []);
    const healed = await w.syncState();
    assert.deepEqual(
      { failures: healed!.watch_failures, retry: healed!.watch_retry_at },
      { failures: 0, retry: null },
      'a renewal that succeeds clears the delay',
    );
  });

  it('no notification for longer than the threshold: the sweep resyncs that account, not the others', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    const bob = await w.signInAs({ sub: 'user-bob', email: 'bob@example.com' });
    w.gmail.seed(ALICE, 6, { sentReplies: false });
    await w.syncAll();
    await w.syncAll(bob.browser, bob.csrfToken);
    unnotifiedChanges(w);
    await w.sql(
      `update sync_states set last_synced_at = now() - interval '7 hours', last_notification_at = now() - interval '7 hours' where account_id = ?`,
      [w.accountId],
    );
    const round = await w.maintenance();
    assert.deepEqual(round.stale, [w.accountId]);
    await assertConverged(w);
    // Heard from recently (a notification), though not synced for long: not stale.
    await w.sql(
      `update sync_states set last_synced_at = now() - interval '7 hours', last_notification_at = now() - interval '1 hour' where account_id = ?`,
      [w.accountId],
    );
    assert.deepEqual((await w.maintenance()).stale, []);
  });

  it('an account never synced whose notifications were all lost is covered by the sweep too', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    await w.idle(); // the sign-in's job ran on an empty mailbox
    await w.sql('update sync_states set history_id = null, last_synced_at = null where account_id = ?', [w.accountId]);
    w.gmail.seed(ALICE, 5, { sentReplies: false });
    assert.deepEqual((await w.maintenance()).stale, [], 'not while it is fresh');
    await w.sql(`update sync_states set updated_at = now() - interval '7 hours' where account_id = ?`, [w.accountId]);
    const round = await w.maintenance();
    assert.deepEqual(round.stale, [w.accountId]);
    assert.equal(round.queued, 1);
    await assertConverged(w);
    assert.equal((await w.stored()).rows, 5);
  });
});
