/**
 * What the sync owns and nothing else may undo: a thread opened
 * while a sync commits only fills bodies; a full resync reconciles deletions and labels of
 * stored inbox messages; a message the provider will not return fails a sync once (the
 * route's SYNC_FAILED), and any later sync, the route's or the background's, sets it aside
 * while the rest of the account and its checkpoint move on; it is retried on its own, and
 * leaves the store when the provider no longer has it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../../../harness/wait.ts';
import { ALICE, allThreads, startMailApp } from './mail-app.ts';

describe('what the sync owns', () => {
  it('a thread opened while a sync commits never deletes its new message nor puts back an older unread state', async (t) => {
    const mail = await startMailApp(t);
    const first = mail.gmail.addMessage(ALICE, { subject: 'Opened while syncing', read: false });
    await mail.drain();
    const [row] = await mail.sql<{ id: string; thread_id: string }>(
      'select m.id, m.thread_id from mail_messages m where provider_message_id = ?',
      [first.id],
    );
    // The open reads the provider's copy now (unread, one message) but its answer comes late...
    mail.gmail.injectFault({ endpoint: 'threads.get', status: 200, delayMs: 800 });
    const asked = mail.gmail.requests.length;
    let answered = false;
    const opening = mail.browser.fetch(`/api/mail/threads/${row!.thread_id}`).finally(() => (answered = true));
    // Once the provider has the open's read (its answer held back), not after a guess at how long that takes.
    await eventually(
      async () => answered || mail.gmail.requests.slice(asked).some((r) => r.endpoint === 'threads.get'),
      30_000,
      5,
    );
    // ...meanwhile the user reads it elsewhere, a reply joins the thread, and a sync commits both.
    mail.gmail.setRead(ALICE, first.id, true);
    const reply = mail.gmail.addMessage(ALICE, { subject: 'Re: Opened while syncing', threadId: first.threadId });
    assert.equal((await mail.syncOk()).messagesSynced, 2);
    const opened = await opening;
    assert.equal(opened.status, 200);
    const stored = await mail.sql<{ provider_message_id: string; is_unread: boolean; body_fetched_at: Date | null }>(
      'select provider_message_id, is_unread, body_fetched_at from mail_messages where thread_id = ? order by sent_at',
      [row!.thread_id],
    );
    assert.deepEqual(
      stored.map((m) => [m.provider_message_id, m.is_unread]),
      [
        [first.id, false],
        [reply.id, true],
      ],
      'the sync committed rows stand',
    );
    assert.ok(stored[0]!.body_fetched_at, 'the opened message got its body');
    const [thread] = await mail.sql<{ is_unread: boolean }>('select is_unread from mail_threads where id = ?', [
      row!.thread_id,
    ]);
    assert.equal(thread!.is_unread, true, 'the reply is unread');
  });

  it('a message the provider will not return costs itself, not the call: set aside at once, the rest stored, for the route and the background alike, and stored once the provider returns it', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 8, { sentReplies: false });
    await mail.drain();
    for (let i = 0; i < 3; i++) mail.gmail.addMessage(ALICE, { subject: `fine ${i}` });
    const poison = mail.gmail.addMessage(ALICE, { subject: 'The provider fails for this one' });
    mail.gmail.injectFault({ endpoint: 'messages.get', status: 500, pathIncludes: poison.id, times: Infinity });
    const checkpoint = async () => (await mail.app.syncState())!.history_id;
    const before = await checkpoint();
    const { id: accountId } = (await mail.app.account({ email: ALICE }))!;

    assert.notEqual(await checkpoint(), String(mail.gmail.historyId(ALICE)));
    // The first press: the failing message is set aside, the rest of the call stored, 200.
    const moved = await mail.syncOk();
    assert.equal(moved.messagesSynced, 3, 'the rest of the batch is stored');
    assert.notEqual(await checkpoint(), before);
    assert.equal(await checkpoint(), String(mail.gmail.historyId(ALICE)), 'the checkpoint moved past it');
    const [aside] = await mail.sql<{ attempts: number; reason: string }>(
      'select attempts, reason from mail_set_aside where provider_message_id = ?',
      [poison.id],
    );
    assert.deepEqual(aside, { attempts: 1, reason: 'HTTP_500' }, 'set aside, with a record of why');
    assert.equal((await mail.stored()).has(poison.id), false);
    for (let i = 0; i < 3; i++)
      assert.equal((await mail.syncOk()).messagesSynced, 0, 'later presses are not held up by it (not due yet)');
    // The background sync job (as it calls the sync) is not held up either.
    assert.equal((await mail.app.container.services.sync.syncAccount(accountId)).messagesSynced, 0);

    mail.gmail.clearFaults();
    await mail.sql('update mail_set_aside set retry_after = now()');
    const retried = await mail.syncOk();
    assert.equal(retried.messagesSynced, 1, 'retried once due, and stored');
    assert.equal((await mail.stored()).get(poison.id)?.in_inbox, true);
    assert.deepEqual(await mail.sql('select * from mail_set_aside'), [], 'its record is gone');
  });

  it("most of a call failing is the provider's failure once; the same messages failing so again are set aside, and the account moves on", async (t) => {
    const mail = await startMailApp(t);
    await mail.drain();
    const bad = Array.from({ length: 4 }, (_, i) => mail.gmail.addMessage(ALICE, { subject: `bad ${i}` }));
    mail.gmail.addMessage(ALICE, { subject: 'good' });
    for (const m of bad)
      mail.gmail.injectFault({ endpoint: 'messages.get', status: 500, pathIncludes: m.id, times: Infinity });
    const failed = await mail.sync();
    assert.equal(failed.status, 502, 'four of five failing: the provider, as far as one call can tell');
    assert.equal((await mail.sql('select 1 from mail_set_aside')).length, 4, 'recorded');
    const moved = await mail.syncOk();
    assert.equal(moved.messagesSynced, 1, 'failing so again: set aside, the good one stored');
    assert.equal(moved.hasMore, false);
  });

  it('a set-aside message deleted upstream is forgotten at its retry', async (t) => {
    const mail = await startMailApp(t);
    await mail.drain();
    const poison = mail.gmail.addMessage(ALICE, { subject: 'Deleted while set aside' });
    mail.gmail.injectFault({ endpoint: 'messages.get', status: 503, pathIncludes: poison.id, times: 1 });
    assert.equal((await mail.sync()).status, 200);
    assert.equal((await mail.sql('select 1 from mail_set_aside')).length, 1);
    mail.gmail.deleteMessage(ALICE, poison.id);
    await mail.sql('update mail_set_aside set retry_after = now()');
    await mail.drain();
    assert.deepEqual(await mail.sql('select * from mail_set_aside'), []);
    assert.equal((await mail.stored()).has(poison.id), false);
  });

  it('a stored message set aside by a resync and deleted upstream leaves the inbox at its retry', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 8, { sentReplies: false });
    await mail.drain();
    const [victim] = mail.gmail.inbox(ALICE);
    // Archived upstream while the history expired: the resync's end check fetches it, and the provider fails for it.
    mail.gmail.archive(ALICE, victim!.id);
    mail.gmail.expireHistory(ALICE);
    mail.gmail.injectFault({ endpoint: 'messages.get', status: 500, pathIncludes: victim!.id, times: 1 });
    assert.equal((await mail.sync()).status, 200, 'its failure costs itself, not the resync');
    await mail.drain();
    const [aside] = await mail.sql<{ attempts: number }>(
      'select attempts from mail_set_aside where provider_message_id = ?',
      [victim!.id],
    );
    assert.equal(aside?.attempts, 1, 'set aside at its first failure');
    assert.equal((await mail.stored()).get(victim!.id)?.in_inbox, true, 'its stored copy is as it was');
    // Deleted upstream while the history expired again: no history record tells; the resync skips it (set aside), its retry finds it gone.
    mail.gmail.deleteMessage(ALICE, victim!.id);
    mail.gmail.expireHistory(ALICE);
    await mail.sql('update mail_set_aside set retry_after = now()');
    await mail.drain();
    assert.deepEqual(await mail.sql('select * from mail_set_aside'), []);
    assert.equal((await mail.stored()).has(victim!.id), false, 'deleted upstream: gone from the store and the inbox');
    const threads = await allThreads(mail);
    assert.deepEqual(
      threads.map((x: { mailThreadId: string }) => x.mailThreadId),
      [...new Set(mail.gmail.inbox(ALICE).map((m) => m.threadId))],
      "the list is the provider's inbox",
    );
  });
});
