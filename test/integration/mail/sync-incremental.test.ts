import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALICE, allThreads, startMailApp, type MailApp } from './mail-app.ts';

/** The stored inbox must equal the provider's: same ids, same unread flags. */
async function assertInboxMatches(mail: MailApp) {
  const stored = await mail.stored();
  const inbox = mail.gmail.inbox(ALICE);
  const storedInbox = [...stored]
    .filter(([, r]) => r.in_inbox)
    .map(([id]) => id)
    .sort();
  assert.deepEqual(storedInbox, inbox.map((m) => m.id).sort());
  for (const m of inbox) assert.equal(stored.get(m.id)!.is_unread, m.unread, `unread flag of ${m.id}`);
  const threads = await allThreads(mail);
  assert.deepEqual(
    threads.map((x) => x.mailThreadId),
    [...new Set(inbox.map((m) => m.threadId))],
  );
}

describe('incremental sync', () => {
  it('picks up new, deleted, read and unread changes from the stored checkpoint only', async (t) => {
    const mail = await startMailApp(t);
    const seeded = mail.gmail.seed(ALICE, 20, { sentReplies: false, readRatio: 0.5 });
    await mail.drain();
    const checkpoint = (await mail.app.syncState())!.history_id;
    assert.equal(checkpoint, String(mail.gmail.historyId(ALICE)));

    const inbox = mail.gmail.inbox(ALICE);
    const unread = inbox.find((m) => m.unread)!;
    const read = inbox.find((m) => !m.unread)!;
    const doomed = seeded.find((m) => m.id !== unread.id && m.id !== read.id)!;
    const fresh = mail.gmail.addMessage(ALICE, {
      subject: 'Brand new',
      from: { name: 'Carol New', address: 'carol@example.org' },
      snippet: "It's <new> & shiny",
    });
    mail.gmail.deleteMessage(ALICE, doomed.id);
    mail.gmail.setRead(ALICE, unread.id, true);
    mail.gmail.setRead(ALICE, read.id, false);

    mail.gmail.resetCounters();
    const r = await mail.syncOk();
    assert.equal(r.messagesSynced, 4);
    assert.equal(r.hasMore, false);
    assert.equal(mail.gmail.calls['messages.list'], 0, 'incremental sync lists nothing');
    assert.equal(mail.gmail.calls['history.list'], 1);
    assert.equal(mail.gmail.calls['messages.get:metadata'], 1, 'only the new message is fetched');
    await assertInboxMatches(mail);
    const stored = await mail.stored();
    assert.equal(stored.has(doomed.id), false);

    const top = (await mail.getJson('/api/mail/threads?limit=1')).body.threads[0];
    assert.equal(top.mailThreadId, fresh.threadId);
    const { fromName, fromAddress, subject, snippet } = top;
    assert.deepEqual(
      { fromName, fromAddress, subject, snippet },
      { fromName: 'Carol New', fromAddress: 'carol@example.org', subject: 'Brand new', snippet: "It's <new> & shiny" },
      'the new message heads its thread as stored',
    );
    assert.equal(top.isUnread, true);

    // A duplicate run (say, a second notification for the same change) changes nothing.
    mail.gmail.resetCounters();
    const again = await mail.syncOk();
    assert.equal(again.messagesSynced, 0);
    assert.equal(mail.gmail.calls['messages.get'], 0);
    await assertInboxMatches(mail);
  });

  it('follows messages archived out of and moved into the inbox', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 10, { sentReplies: false });
    // Archived before the first sync: never listed, so never stored.
    const hidden = mail.gmail.addMessage(ALICE, { subject: 'Filed away', labelIds: ['CATEGORY_UPDATES'] });
    await mail.drain();
    assert.equal((await mail.stored()).has(hidden.id), false);

    const single = mail.gmail.addMessage(ALICE, { subject: 'Lonely thread' });
    await mail.syncOk();
    let threads = await allThreads(mail);
    assert.ok(threads.some((x) => x.mailThreadId === single.threadId));

    mail.gmail.archive(ALICE, single.id);
    mail.gmail.moveToInbox(ALICE, hidden.id);
    const r = await mail.syncOk();
    assert.equal(r.messagesSynced, 2);
    threads = await allThreads(mail);
    assert.equal(
      threads.some((x) => x.mailThreadId === single.threadId),
      false,
      'a thread with no inbox message leaves the list',
    );
    assert.ok(
      threads.some((x) => x.mailThreadId === hidden.threadId),
      'a message moved into the inbox is fetched',
    );
    const stored = await mail.stored();
    assert.equal(stored.get(single.id)?.in_inbox, false, 'archived messages stay stored, out of the inbox');
    await assertInboxMatches(mail);

    mail.gmail.moveToInbox(ALICE, single.id);
    await mail.syncOk();
    await assertInboxMatches(mail);
  });

  it('stores a sent reply of a known thread and keeps the thread subject from its first message', async (t) => {
    const mail = await startMailApp(t);
    const first = mail.gmail.addMessage(ALICE, { subject: 'Quarterly plan' });
    await mail.drain();
    const reply = mail.gmail.addSentReply(ALICE, first.threadId);
    const answer = mail.gmail.addMessage(ALICE, { threadId: first.threadId, read: true });
    assert.equal(answer.subject, 'Re: Quarterly plan');
    const r = await mail.syncOk();
    assert.equal(r.messagesSynced, 2);
    const stored = await mail.stored();
    assert.equal(stored.get(reply.id)?.in_inbox, false);
    const [thread] = await allThreads(mail);
    assert.equal(thread.subject, 'Quarterly plan');
    assert.equal(thread.lastMessageAt, new Date(answer.internalDate).toISOString());
    assert.equal(thread.isUnread, true, 'the first message is still unread');
  });
});
