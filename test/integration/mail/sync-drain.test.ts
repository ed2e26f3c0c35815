import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALICE, allThreads, startMailApp } from './mail-app.ts';

describe('first sync drains the inbox in bounded steps', () => {
  it('stores a 230-message inbox in 50-message steps, newest first, metadata only, then a re-run adds nothing', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 230, { sentReplies: true });
    const inbox = mail.gmail.inbox(ALICE);
    assert.equal(inbox.length, 230);

    const before = await mail.getJson('/api/mail/sync-state');
    assert.deepEqual(before.body, { lastSyncedAt: null });

    const first = await mail.syncOk();
    assert.equal(first.messagesSynced, 50);
    assert.equal(first.hasMore, true);
    assert.match(first.lastSyncedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The first step holds exactly the 50 newest inbox messages.
    const afterFirst = await mail.stored();
    assert.deepEqual(
      [...afterFirst.keys()].sort(),
      inbox
        .slice(0, 50)
        .map((m) => m.id)
        .sort(),
    );

    const rest = await mail.drain();
    assert.deepEqual(
      rest.map((r) => r.messagesSynced),
      [50, 50, 50, 30],
    );
    assert.deepEqual(
      rest.map((r) => r.hasMore),
      [true, true, true, false],
    );

    const stored = await mail.stored();
    assert.equal(stored.size, 230);
    for (const m of inbox) {
      const row = stored.get(m.id);
      assert.ok(row, `message ${m.id} missing`);
      assert.equal(row.in_inbox, true);
      assert.equal(row.is_unread, m.unread);
    }
    const [{ n }] = await mail.sql<{ n: number }>(
      'select count(*)::int as n from mail_messages where body_fetched_at is not null or body_text is not null',
    );
    assert.equal(n, 0, 'sync stores metadata only');
    assert.equal(mail.gmail.calls['messages.get:full'], 0);
    assert.equal(mail.gmail.calls['threads.get:full'] ?? 0, 0);
    // Three or more wanted messages of one thread come from one threads.get (metadata): 40 units instead of 60 or more.
    const gets = mail.gmail.calls['messages.get:metadata'] ?? 0;
    const threadReads = mail.gmail.calls['threads.get:metadata'] ?? 0;
    assert.ok(
      gets + 3 * threadReads <= 230 && gets + 3 * threadReads > 200,
      `${gets} messages read one by one, ${threadReads} threads read whole`,
    );
    assert.ok(20 * gets + 40 * threadReads <= 20 * 230, 'never more units than one messages.get each');

    // The list: one entry per inbox thread, newest first, with the thread's latest inbox message.
    const threads = await allThreads(mail);
    const expectedThreads = [...new Set(inbox.map((m) => m.threadId))];
    assert.deepEqual(
      threads.map((x) => x.mailThreadId),
      expectedThreads,
    );
    const latest = inbox.find((m) => m.threadId === threads[0].mailThreadId)!;
    assert.equal(threads[0].lastMessageAt, new Date(latest.internalDate).toISOString());
    assert.equal(threads[0].snippet, latest.snippet);

    const again = await mail.syncOk();
    assert.equal(again.messagesSynced, 0);
    assert.equal(again.hasMore, false);
    const [{ msgs, thr }] = await mail.sql<{ msgs: number; thr: number }>(
      'select (select count(*)::int from mail_messages) as msgs, (select count(*)::int from mail_threads) as thr',
    );
    assert.equal(msgs, 230);
    assert.equal(thr, expectedThreads.length);

    const state = await mail.getJson('/api/mail/sync-state');
    assert.equal(state.body.lastSyncedAt, again.lastSyncedAt);
  });
});
