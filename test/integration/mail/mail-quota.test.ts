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
    const w = await startLiveWorld(t, { work: false, intake: false, env: { GMAIL_USER_UNITS_PER_MINUTE: String(LIMIT) }, mailQuota: { windowMs: WINDOW_MS, flushMs: 100 } });
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
    assert.ok(w.gmail.quotaPeak(BOB.email) <= LIMIT, `at most ${LIMIT} units in any window (${w.gmail.quotaPeak(BOB.email)})`);
    assert.ok(w.gmail.quotaPeak(BOB.email) >= LIMIT * 0.5, `the backfill used the window (${w.gmail.quotaPeak(BOB.email)})`);
    assert.deepEqual((await w.stored(bob.accountId)).inbox, w.providerInbox(BOB.email));
    // The day's ledger (every instance's flushes), by method and purpose: the backfill's fetches and the opens.
    const day = new Date().toISOString().slice(0, 10);
    const units = async (method: string, purpose: string) => (await dayByMethod(w.app.container.orm.em.fork(), day)).find((r) => r.method === method && r.purpose === purpose)?.units ?? 0;
    await waitFor(async () => (await units('messages.get', 'backfill')) >= 130 * 20, 'the backfill\'s fetches in the day ledger');
    assert.equal(await units('threads.get', 'open'), 6 * 40, 'six opens at 40 units');
  });
});
