/**
 * Big inboxes (issue 28): a listing (backfill or resync) reads the inbox as ids, 500 a page,
 * and fetches only what the store does not know; a second cursor reads the history since the
 * listing began between its pages, so mail that arrives during a long listing is stored
 * within a call. Checked against the stand-in's own inbox after every kind of change made
 * while the listing runs, and by the quota units the provider counted.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALICE, startMailApp, type MailApp } from './mail-app.ts';

/** Gmail's quota units per call (messages.list 5, messages.get 5, history.list 2, profile 1, labels.get 1). */
function units(calls: Record<string, number>): number {
  return (
    5 * (calls['messages.list'] ?? 0) +
    5 * (calls['messages.get:metadata'] ?? 0) +
    2 * (calls['history.list'] ?? 0) +
    (calls.profile ?? 0) +
    (calls['labels.get'] ?? 0)
  );
}

async function accountOf(mail: MailApp): Promise<string> {
  return (await mail.app.account({ email: ALICE }))!.id;
}

async function listingActive(mail: MailApp): Promise<boolean> {
  return (await mail.app.syncState())!.full_sync_active;
}

/** The stored inbox and the provider's, as sorted `id:unread|read` lists, and no duplicate rows. */
async function assertSameInbox(mail: MailApp, what: string) {
  const stored = await mail.stored();
  const mine = [...stored]
    .filter(([, m]) => m.in_inbox)
    .map(([id, m]) => `${id}:${m.is_unread ? 'unread' : 'read'}`)
    .sort();
  const theirs = mail.gmail
    .inbox(ALICE)
    .map((m) => `${m.id}:${m.unread ? 'unread' : 'read'}`)
    .sort();
  assert.deepEqual(mine, theirs, `${what}: the stored inbox is the provider's`);
  const [{ rows, distinct }] = await mail.sql<{ rows: number; distinct: number }>(
    'select count(*)::int as rows, count(distinct provider_message_id)::int as distinct from mail_messages',
  );
  assert.equal(rows, distinct, `${what}: no duplicate rows`);
  const [{ n }] = await mail.sql<{ n: number }>('select count(*)::int as n from mail_listing');
  assert.equal(n, 0, `${what}: the listing's ids are gone once it ended`);
}

/** Changes of every kind a user makes upstream, chosen by `step` (deterministic). */
function changeUpstream(mail: MailApp, step: number) {
  const inbox = mail.gmail.inbox(ALICE);
  const pick = (k: number) => inbox[(step * 7919 + k * 104729) % inbox.length]!;
  mail.gmail.addMessage(ALICE, { subject: `Arrived during the listing ${step}` });
  mail.gmail.archive(ALICE, pick(1).id);
  mail.gmail.setRead(ALICE, pick(2).id, pick(2).unread);
  mail.gmail.deleteMessage(ALICE, pick(3).id);
  const back = mail.gmail.messages(ALICE).find((m) => !m.labelIds.includes('INBOX') && !m.labelIds.includes('SENT'));
  if (back) mail.gmail.moveToInbox(ALICE, back.id);
}

describe('listing a big inbox', () => {
  it('stores mail that arrives during a backfill within the next call, long before the backfill ends', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 600, { sentReplies: false });
    const accountId = await accountOf(mail);
    const sync = () => mail.app.container.services.sync.syncAccount(accountId);
    await sync();
    const fresh = mail.gmail.addMessage(ALICE, { subject: 'New while the backfill runs' });
    const second = await sync();
    assert.equal(second.hasMore, true);
    assert.ok(await listingActive(mail), 'the backfill still runs');
    assert.equal((await mail.stored()).get(fresh.id)?.in_inbox, true, 'the new message is stored by the next call');
    for (let i = 0; i < 30 && (await sync()).hasMore; i++);
    assert.equal(await listingActive(mail), false);
    await assertSameInbox(mail, 'after the backfill');
  });

  it("ends a backfill and a resync with the provider's inbox whatever changes while they run", async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 2600, { sentReplies: false, readRatio: 0.5, archivedRatio: 0.1 });
    const accountId = await accountOf(mail);
    const sync = (maxMessages = 50) => mail.app.container.services.sync.syncAccount(accountId, { maxMessages });
    let step = 0;
    for (let i = 0; i < 200 && (await sync()).hasMore; i++) if (i % 5 === 0) changeUpstream(mail, step++);
    while ((await sync()).hasMore);
    await assertSameInbox(mail, 'after the backfill');

    // The history expires (a long outage): the resync lists ids; changes keep coming between its calls.
    for (let i = 0; i < 5; i++) changeUpstream(mail, step++);
    mail.gmail.expireHistory(ALICE);
    let calls = 0;
    for (; calls < 100; calls++) {
      const r = await sync(10);
      if (!r.hasMore) break;
      changeUpstream(mail, step++);
    }
    assert.ok(calls >= 2, `the resync spans several calls (${calls}), with changes between them`);
    await assertSameInbox(mail, 'after the resync');
  });

  it('resyncs a big inbox that changed little by difference: a few list pages and only what changed is fetched', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 2000, { sentReplies: false, readRatio: 0.5 });
    const accountId = await accountOf(mail);
    const sync = () => mail.app.container.services.sync.syncAccount(accountId);
    while ((await sync()).hasMore);
    const inbox = mail.gmail.inbox(ALICE);
    for (const m of inbox.slice(10, 13)) mail.gmail.archive(ALICE, m.id);
    for (const m of inbox.slice(20, 25)) mail.gmail.setRead(ALICE, m.id, m.unread);
    for (const m of inbox.slice(30, 32)) mail.gmail.deleteMessage(ALICE, m.id);
    for (let i = 0; i < 4; i++) mail.gmail.addMessage(ALICE, { subject: `new ${i}` });
    mail.gmail.expireHistory(ALICE);

    mail.gmail.resetCounters();
    while ((await sync()).hasMore);
    await assertSameInbox(mail, 'after the resync');
    // Fetched: the 4 new, the 3 archived and the 2 deleted (to learn which); the 5 read/unread flips come from the ids.
    assert.equal(mail.gmail.calls['messages.get:metadata'], 9);
    const spent = units(mail.gmail.calls);
    const everything = 5 * 2000;
    t.diagnostic(
      `resync of 2,000: ${spent} quota units, ${((100 * spent) / everything).toFixed(1)} % of fetching every message (${everything})`,
    );
    assert.ok(spent <= 0.05 * everything, `${spent} units is more than 5 % of fetching every message`);
  });

  it('keeps what was fetched when the quota runs out part-way, and deletes nothing it did not hear was gone', async (t) => {
    const mail = await startMailApp(t);
    // One message a thread: every message comes by messages.get, so the quota's place in the calls is exact.
    for (let i = 0; i < 60; i++) mail.gmail.addMessage(ALICE, { subject: `m ${i}` });
    const quotaAfter = (calls: number) =>
      mail.gmail.injectFault({
        endpoint: 'messages.get',
        status: 429,
        reason: 'rateLimitExceeded',
        retryAfterSeconds: 1,
        afterCalls: calls,
        times: Infinity,
      });
    const expectQuota = async () => {
      const res = await mail.sync();
      assert.equal(res.status, 429);
      assert.equal((await res.json()).error.code, 'MAIL_RATE_LIMITED');
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
    };

    // The backfill's first call: 20 fetched before the quota ran out are stored; the route answers the quota.
    quotaAfter(20);
    await expectQuota();
    assert.equal((await mail.stored()).size, 20, 'what was fetched is kept');
    mail.gmail.clearFaults();
    await mail.drain();
    await assertSameInbox(mail, 'after the backfill');

    // History: 30 new messages, the quota runs out after 10.
    for (let i = 0; i < 30; i++) mail.gmail.addMessage(ALICE, { subject: `new ${i}` });
    quotaAfter(10);
    await expectQuota();
    assert.equal((await mail.stored()).size, 70, 'the 10 fetched are kept');
    mail.gmail.clearFaults();
    await mail.drain();
    await assertSameInbox(mail, 'after the history');

    // A resync whose end check meets the quota: the messages it could not fetch are not taken for deleted.
    const archived = mail.gmail
      .inbox(ALICE)
      .slice(5, 10)
      .map((m) => m.id);
    for (const id of archived) mail.gmail.archive(ALICE, id);
    mail.gmail.expireHistory(ALICE);
    quotaAfter(2);
    await expectQuota();
    const stored = await mail.stored();
    assert.ok(
      archived.every((id) => stored.has(id)),
      'none of the archived messages was deleted',
    );
    mail.gmail.clearFaults();
    await mail.drain();
    await assertSameInbox(mail, 'after the resync');
    assert.equal((await mail.stored()).size, 90, 'every message still stored (archived ones out of the inbox)');
  });

  it('a resync that ends within its call answers hasMore false when nothing is left (9 messages, the history expired, one new)', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 9, { sentReplies: false });
    await mail.drain();
    mail.gmail.addMessage(ALICE, { subject: 'after the expiry' });
    mail.gmail.expireHistory(ALICE);
    const r = await mail.syncOk();
    assert.deepEqual({ messagesSynced: r.messagesSynced, hasMore: r.hasMore }, { messagesSynced: 1, hasMore: false });
    assert.equal(await listingActive(mail), false, 'the listing ended in the call');
    await assertSameInbox(mail, 'after the resync');
    // A change after the listing began is still caught: the next call replays it.
    mail.gmail.addMessage(ALICE, { subject: 'later' });
    const next = await mail.syncOk();
    assert.equal(next.messagesSynced, 1);
    await assertSameInbox(mail, 'after the next call');
  });
});
