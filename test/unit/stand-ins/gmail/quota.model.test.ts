/**
 * The Gmail stand-in's per-user quota (stand-ins/gmail/quota.model.ts): the window arithmetic on
 * the ledger with an injected clock, then the same rules over the REST API: the 2026 costs, the
 * 429 and its Retry-After, one window per mailbox across tokens, and the legacy number form.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QuotaLedger, QUOTA_COSTS_2026, QUOTA_COSTS_LEGACY } from '../../../../stand-ins/gmail/quota.model.ts';
import { DEFAULT_MAILBOX, startGmailStandIn, type GmailStandIn } from '../../../../stand-ins/gmail.stand-in.ts';

const ALICE = DEFAULT_MAILBOX;

describe('gmail stand-in quota: the ledger', () => {
  it('has the 2026 and legacy cost tables of the contract', () => {
    assert.deepEqual(
      { ...QUOTA_COSTS_2026 },
      {
        'messages.get': 20,
        'attachments.get': 20,
        'threads.get': 40,
        'threads.list': 10,
        'messages.list': 5,
        'history.list': 2,
        'labels.get': 1,
        profile: 1,
        watch: 100,
        stop: 50,
      },
    );
    assert.deepEqual(
      { ...QUOTA_COSTS_LEGACY },
      { ...QUOTA_COSTS_2026, 'messages.get': 5, 'attachments.get': 5, 'threads.get': 10 },
    );
  });

  it('refuses what would pass the window, says when enough of it frees, and charges again once it has', () => {
    const q = new QuotaLedger();
    q.set({ unitsPerWindow: 50, windowMs: 10_000 });
    assert.deepEqual(q.charge('a', 20, 0), { charged: true });
    assert.deepEqual(q.charge('a', 20, 3_000), { charged: true });
    assert.deepEqual(q.charge('a', 20, 4_000), { charged: false, retryAfterSeconds: 6 }, 'the first 20 leave at 10 s');
    assert.deepEqual(q.charge('a', 40, 4_000), { charged: false, retryAfterSeconds: 9 }, 'both must leave: 13 s');
    assert.deepEqual(q.charge('a', 20, 9_999.5), { charged: false, retryAfterSeconds: 1 }, 'never less than a second');
    assert.equal(q.spent('a'), 40, 'refused calls are not charged');
    assert.deepEqual(q.charge('a', 20, 10_000), { charged: true }, 'the window is (now - windowMs, now]');
    assert.deepEqual(q.charge('a', 10, 10_000), { charged: true });
    assert.equal(q.peak('a'), 50);
    assert.deepEqual(q.charge('b', 50, 10_000), { charged: true }, 'another user has a window of its own');
    assert.deepEqual(
      q.charge('a', 60, 100_000),
      { charged: false, retryAfterSeconds: 10 },
      'more than a whole window never fits',
    );
  });

  it('observes the peak of any window without refusing at Infinity, and forgets observations but not the window on reset', () => {
    const q = new QuotaLedger();
    q.set({ unitsPerWindow: Infinity, windowMs: 1_000 });
    for (let t = 0; t < 5_000; t += 100) assert.equal(q.charge('a', 20, t, 'messages.get').charged, true);
    q.charge('a', 300, 4_950, 'threads.get');
    assert.equal(q.peak('a'), 500, 'ten calls of 20 per second, then 300 more within the last');
    assert.equal(q.spent('a'), 50 * 20 + 300);
    assert.deepEqual(q.unitsByEndpoint(), { 'messages.get': 1000, 'threads.get': 300 });

    q.set({ unitsPerWindow: 100, windowMs: 1_000 });
    assert.equal(q.peak('a'), 0, 'a new quota starts a fresh window and peak');
    assert.equal(q.spent('a'), 1300, 'the total runs on across quotas');
    q.charge('a', 80, 6_000);
    q.resetObservations();
    assert.deepEqual([q.peak('a'), q.spent('a'), q.unitsByEndpoint()], [0, 0, {}]);
    assert.equal(q.charge('a', 30, 6_500).charged, false, 'the 80 before the reset still fill the window');
    assert.equal(q.charge('a', 20, 6_500).charged, true);
    assert.equal(q.peak('a'), 20, 'the peak counts only what was charged since the reset');
  });

  it('charges nothing without a quota, and rejects a malformed one', () => {
    const q = new QuotaLedger();
    assert.deepEqual(q.charge('a', 1e9, 0), { charged: true });
    assert.equal(q.spent('a'), 0);
    assert.equal(q.cost('messages.get'), 0);
    assert.throws(() => q.set({ unitsPerWindow: -1 }), /unitsPerWindow/);
    assert.throws(() => q.set({ unitsPerWindow: 10, windowMs: 0 }), /windowMs/);
    assert.throws(() => q.set({ unitsPerWindow: 10, profile: '2027' as never }), /profile/);
    q.set({ unitsPerWindow: 10 });
    assert.equal(q.cost('messages.get'), 20, 'the 2026 profile by default');
    assert.equal(q.cost('discovery'), 0);
  });
});

describe('gmail stand-in quota: over the wire', () => {
  let s: GmailStandIn;
  let ids: { message: string; thread: string; attachment: string };
  before(async () => {
    s = await startGmailStandIn({ seed: 3 });
    s.setToken('alice-1', ALICE);
    s.setToken('alice-2', ALICE.toUpperCase());
    s.setToken('bob-1', 'bob@example.com');
    const m = s.addMessage(ALICE, { attachments: [{ filename: 'a.pdf', mimeType: 'application/pdf', size: 100 }] });
    ids = { message: m.id, thread: m.threadId, attachment: m.attachments[0]!.attachmentId };
  });
  after(() => s.close());
  beforeEach(() => s.resetCounters());
  afterEach(() => s.setQuota(null));

  const call = (path: string, token = 'alice-1', method = 'GET') =>
    fetch(`${s.url}gmail/v1/users/me/${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(method === 'POST' ? { body: JSON.stringify({ topicName: 'projects/p/topics/t' }) } : {}),
    });
  const get = async (path: string, token?: string) => {
    const res = await call(path, token);
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as { error?: { message: string; errors: { reason: string; domain: string }[] } },
    };
  };

  it('charges each endpoint its 2026 cost, per endpoint and in total', async () => {
    s.setQuota({ unitsPerWindow: 10_000 });
    const paths = [
      'profile',
      'labels/INBOX',
      'messages',
      `messages/${ids.message}`,
      `messages/${ids.message}/attachments/${ids.attachment}`,
      `threads/${ids.thread}`,
      `history?startHistoryId=${s.historyId(ALICE)}`,
    ];
    for (const p of paths) assert.equal((await call(p)).status, 200, p);
    assert.equal((await call('watch', 'alice-1', 'POST')).status, 200);
    assert.equal((await call('stop', 'alice-1', 'POST')).status, 204);
    const byEndpoint = s.quotaUnitsByEndpoint();
    const { 'threads.list': _unserved, ...served } = QUOTA_COSTS_2026;
    assert.deepEqual(byEndpoint, served);
    assert.equal(
      s.quotaSpent(ALICE),
      Object.values(served).reduce((a, b) => a + b, 0),
    );
  });

  it("refuses past the window with Google's rateLimitExceeded and a Retry-After, uncharged, then serves once the window frees", async () => {
    s.setQuota({ unitsPerWindow: 45, windowMs: 60_000 });
    assert.equal((await get(`messages/${ids.message}`)).status, 200);
    assert.equal((await get(`messages/${ids.message}`)).status, 200);
    const refused = await get(`messages/${ids.message}`);
    assert.equal(refused.status, 429);
    assert.equal(refused.retryAfter, '60');
    assert.equal(refused.body.error?.message, 'User-rate limit exceeded.');
    assert.deepEqual(
      refused.body.error?.errors.map((e) => [e.reason, e.domain]),
      [['rateLimitExceeded', 'usageLimits']],
    );
    assert.equal((await get('messages')).status, 200, 'a cheaper call still fits: 40 + 5');
    assert.deepEqual([s.calls['quota-refused'], s.quotaSpent(ALICE), s.quotaPeak(ALICE)], [1, 45, 45]);

    s.setQuota({ unitsPerWindow: 20, windowMs: 200 });
    const start = Date.now();
    assert.equal((await get(`messages/${ids.message}`)).status, 200);
    const short = await get(`messages/${ids.message}`);
    assert.deepEqual([short.status, short.retryAfter], [429, '1'], 'a part of a second rounds up to one');
    let status = 429;
    while (status === 429) {
      await new Promise((r) => setTimeout(r, 20));
      status = (await get(`messages/${ids.message}`)).status;
    }
    assert.ok(Date.now() - start >= 200, `served again after the window: ${Date.now() - start} ms`);
    assert.equal(s.quotaPeak(ALICE), 20);
  });

  it("counts one mailbox's tokens together, another's apart, and an unknown token on its own", async () => {
    s.setQuota({ unitsPerWindow: 40 });
    assert.equal((await get(`messages/${ids.message}`, 'alice-1')).status, 200);
    assert.equal((await get(`messages/${ids.message}`, 'alice-2')).status, 200);
    assert.equal(
      (await get(`messages/${ids.message}`, 'alice-2')).status,
      429,
      'alice-2 finds the window alice-1 filled',
    );
    assert.equal((await get('messages', 'bob-1')).status, 200);
    assert.equal((await get('messages', 'stranger')).status, 401);
    assert.deepEqual([s.quotaSpent(ALICE), s.quotaSpent('bob@example.com'), s.quotaSpent('stranger')], [40, 5, 5]);
  });

  it('keeps the legacy number form: legacy costs in a moving second', async () => {
    s.setQuota(12);
    assert.equal((await get(`messages/${ids.message}`)).status, 200);
    assert.equal((await get(`messages/${ids.message}`)).status, 200);
    const refused = await get(`messages/${ids.message}`);
    assert.deepEqual([refused.status, refused.retryAfter], [429, '1']);
    assert.equal((await get('labels/INBOX')).status, 200);
    assert.deepEqual(s.quotaUnitsByEndpoint(), { 'messages.get': 10, 'labels.get': 1 });
    s.setQuota({ unitsPerWindow: 100, profile: 'legacy' });
    assert.equal((await get(`threads/${ids.thread}`)).status, 200);
    assert.equal(s.quotaUnitsByEndpoint()['threads.get'], 10);
    s.setQuota(null);
    assert.equal((await get(`threads/${ids.thread}`)).status, 200);
    assert.equal(s.quotaSpent(ALICE), 21, 'nothing is charged without a quota');
  });
});
