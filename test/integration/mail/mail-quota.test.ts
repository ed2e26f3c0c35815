/**
 * The mail quota (runtime contract part 3 "Quota") against the Gmail stand-in's 2026 quota
 * mode (the profile's costs, a moving per-user window, 429 past it), scaled down: a window
 * of WINDOW_MS instead of 60 s, the same in the service's ledger and in the stand-in.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dayByMethod } from '../../../server/domain/mail-quota/quota-ledger.ts';
import { startLiveWorld, waitFor, type LiveWorld } from '../live/live-harness.ts';

const BOB = { sub: 'user-bob', email: 'bob@example.com' };
const WINDOW_MS = 2_000;
const LIMIT = 1_000;

async function threadIds(w: LiveWorld, browser = w.browser): Promise<string[]> {
  const res = await browser.fetch('/api/mail/threads?limit=100');
  assert.equal(res.status, 200);
  return (await res.json()).threads.map((t: { id: string }) => t.id);
}

describe('mail quota', () => {
  it('two instances backfilling and opening threads for one user never pass the per-user limit: no call refused, every open answered', async (t) => {
    // The route on this instance (no job workers), the backfill's jobs on another: one ledger for both.
    const w = await startLiveWorld(t, {
      work: false,
      intake: false,
      env: { GMAIL_USER_UNITS_PER_MINUTE: String(LIMIT) },
      // The default skew: the opens' lane waits at most 2.5 s for room, which must outlast the ledger's window (2.35 s).
      mailQuota: { windowMs: WINDOW_MS, flushMs: 100 },
    });
    await w.instance({ intake: false });
    w.gmail.setQuota({ unitsPerWindow: LIMIT, windowMs: WINDOW_MS, profile: '2026' });
    w.gmail.seed(BOB.email, 130, { sentReplies: false });
    w.gmail.resetCounters();
    const bob = await w.signInAs(BOB);
    await waitFor(async () => (await w.stored(bob.accountId)).rows >= 20, 'the backfill under way', 30_000);
    const opens: number[] = [];
    for (const id of (await threadIds(w, bob.browser)).slice(0, 6)) {
      const res = await bob.browser.fetch(`/api/mail/threads/${id}`);
      opens.push(res.status);
    }
    await waitFor(async () => (await w.stored(bob.accountId)).rows === 130, 'the whole inbox stored', 60_000);
    assert.deepEqual(opens, [200, 200, 200, 200, 200, 200], 'every thread opened during the backfill answered');
    assert.equal(w.gmail.calls['quota-refused'] ?? 0, 0, 'the provider never refused a call for quota');
    assert.ok(
      w.gmail.quotaPeak(BOB.email) <= LIMIT,
      `at most ${LIMIT} units in any window (${w.gmail.quotaPeak(BOB.email)})`,
    );
    assert.ok(
      w.gmail.quotaPeak(BOB.email) >= LIMIT * 0.5,
      `the backfill used the window (${w.gmail.quotaPeak(BOB.email)})`,
    );
    assert.deepEqual((await w.stored(bob.accountId)).inbox, w.providerInbox(BOB.email));
    // The day's ledger (every instance's flushes) holds what the provider charged for the messages, by method and purpose.
    const day = new Date().toISOString().slice(0, 10);
    const rows = () => dayByMethod(w.app.container.orm.em.fork(), day);
    const ofMethod = async (method: string) =>
      (await rows()).filter((r) => r.method === method).reduce((n, r) => n + r.units, 0);
    const charged = w.gmail.quotaUnitsByEndpoint();
    await waitFor(
      async () =>
        (await ofMethod('messages.get')) === charged['messages.get'] &&
        (await ofMethod('threads.get')) === charged['threads.get'],
      'the day ledger to hold what the provider charged',
    );
    assert.equal(
      (await rows()).find((r) => r.method === 'threads.get' && r.purpose === 'open')?.units,
      6 * 40,
      'six opens at 40 units',
    );
  });

  it('at the daily budget the backfill waits for the next UTC day and says so; notified mail and opens go on; the next day it resumes', async (t) => {
    // Two hours before midnight on the service's day clock: the backfill's wait is hours, longer than any retry.
    // 1,500 units a day: about 60 of the 100 messages (20 units each) the first day, the rest the next.
    let now = new Date('2026-12-01T22:00:00Z');
    const w = await startLiveWorld(t, {
      forward: false,
      env: { GMAIL_USER_UNITS_PER_MINUTE: '0', GMAIL_DAILY_UNIT_BUDGET: '1500' },
      mailQuota: { now: () => now },
    });
    await w.idle();
    w.gmail.seed(BOB.email, 100, { sentReplies: false });
    const bob = await w.signInAs(BOB);
    const syncState = async () =>
      (await (await bob.browser.fetch('/api/mail/sync-state')).json()) as {
        lastSyncedAt: string | null;
        quotaWaitUntil?: string;
      };
    const waiting = await waitFor(
      async () => (await syncState()).quotaWaitUntil,
      'the backfill to wait for the daily budget',
      30_000,
    );
    const stored = (await w.stored(bob.accountId)).rows;
    assert.ok(stored > 0 && stored < 100, `part of the inbox stored before the budget ran out (${stored})`);
    const hours = (Date.parse(waiting!) - Date.now()) / 3_600_000;
    assert.ok(hours > 1.9 && hours <= 2, `it waits until the next UTC day (${hours.toFixed(2)} h)`);
    // The job logs its outcome after it has recorded the wait that the sync state shows.
    await waitFor(
      () =>
        w.app.logs.some(
          (l) => l.msg === 'mail sync job done' && l.accountId === bob.accountId && l.outcome === 'daily-budget',
        ),
      'the job to log its daily-budget outcome',
    );

    // Mail notified meanwhile is stored (its notification brings the deferred job forward; the history read is not bulk work).
    const fresh = w.gmail.addMessage(BOB.email, { subject: 'While the budget is spent' });
    w.publish({ emailAddress: BOB.email });
    await waitFor(
      async () =>
        (
          await w.sql('select 1 from mail_messages where account_id = ? and provider_message_id = ?', [
            bob.accountId,
            fresh.id,
          ])
        ).length === 1,
      'the notified message stored',
      15_000,
    );
    assert.ok((await w.stored(bob.accountId)).rows < 101, 'the backfill itself still waits');
    const [first] = await threadIds(w, bob.browser);
    assert.equal((await bob.browser.fetch(`/api/mail/threads/${first!}`)).status, 200, 'a thread opens');

    // The next UTC day: the next notification brings the job forward again and the backfill ends.
    now = new Date('2026-12-02T00:00:05Z');
    w.publish({ emailAddress: BOB.email });
    await waitFor(
      async () => (await w.stored(bob.accountId)).rows === 101,
      'the whole inbox stored the next day',
      30_000,
    );
    assert.deepEqual((await w.stored(bob.accountId)).inbox, w.providerInbox(BOB.email));
  });
});
