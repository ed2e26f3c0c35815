import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSyncService } from '../../../server/domain/mail/sync/sync.service.ts';
import { createGmailFactory, type GmailFactory } from '../../../server/providers/gmail.ts';
import { ALICE, recoveryState, allThreads, startMailApp, type MailApp } from './mail-app.ts';

async function snapshot(mail: MailApp) {
  const state = await recoveryState(mail);
  const messages = await mail.sql(
    'select provider_message_id, label_ids, is_unread, in_inbox, updated_at from mail_messages order by provider_message_id',
  );
  const threads = await mail.sql(
    'select provider_thread_id, subject, snippet, last_message_at, is_unread, in_inbox from mail_threads order by provider_thread_id',
  );
  return { state, messages, threads };
}

describe('sync recovery', () => {
  it('an expired checkpoint falls back to a full resync that reconciles without duplicates', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 120, { sentReplies: false, readRatio: 0.5 });
    await mail.drain();
    const inbox = mail.gmail.inbox(ALICE);
    const archived = inbox[3]!;
    const toggled = inbox.find((m) => m.unread)!;
    const deleted = inbox[7]!;
    mail.gmail.archive(ALICE, archived.id);
    mail.gmail.setRead(ALICE, toggled.id, true);
    mail.gmail.deleteMessage(ALICE, deleted.id);
    const fresh = mail.gmail.addMessage(ALICE, { subject: 'Arrived while the checkpoint expired' });
    mail.gmail.expireHistory(ALICE);

    mail.gmail.resetCounters();
    const steps = await mail.drain();
    // By difference: the unread ids and the inbox ids (one page of 500 each), then only the
    // unknown message and the two stored ones the listing did not name are fetched.
    assert.equal(
      steps.length,
      1,
      '120 inbox messages: one call lists them by id, fetches what differs and finds no history since it began',
    );
    assert.deepEqual(
      steps.map((s) => s.hasMore),
      [false],
    );
    assert.equal(
      mail.gmail.calls['history.list'],
      2,
      'the 404 is met once, the listing runs, then the history since it began is read (empty)',
    );
    assert.equal(mail.gmail.calls.profile, 1, 'the new checkpoint');
    assert.equal(mail.gmail.calls['messages.list'], 2, "the inbox's unread ids, then its ids");
    assert.equal(
      mail.gmail.calls['messages.get:metadata'],
      3,
      'the new message, the archived one and the deleted one (404)',
    );
    assert.equal(mail.gmail.calls['messages.get:full'], 0);
    // Only what changed upstream counts: the new message, the read flag, the archived and the deleted one.
    assert.equal(
      steps.reduce((n, s) => n + s.messagesSynced, 0),
      4,
    );

    const stored = await mail.stored();
    assert.equal(stored.size, 120, 'no duplicates: 120 seeded + 1 new - 1 deleted');
    assert.equal(stored.get(fresh.id)?.in_inbox, true);
    assert.equal(stored.get(toggled.id)?.is_unread, false);
    assert.equal(stored.get(archived.id)?.in_inbox, false, 'the resync takes archived messages out of the inbox');
    assert.equal(stored.get(deleted.id), undefined, 'a message deleted upstream is deleted, with its unread state');
    const threads = await allThreads(mail);
    assert.deepEqual(
      threads.map((x) => x.mailThreadId),
      [...new Set(mail.gmail.inbox(ALICE).map((m) => m.threadId))],
    );

    // Back on history: the new checkpoint is honoured.
    mail.gmail.resetCounters();
    const next = await mail.syncOk();
    assert.equal(next.messagesSynced, 0);
    assert.equal(mail.gmail.calls['history.list'], 1);
    assert.equal(mail.gmail.calls['messages.list'], 0);
  });

  it('a resync reconciles the stored messages outside the inbox: deleted replies go, read state follows', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 20, { sentReplies: false, readRatio: 0 });
    await mail.drain();
    const [a, b, c] = mail.gmail.inbox(ALICE);
    // A reply of the owner's and two messages archived out of inbox threads, each stored by the live history.
    const reply = mail.gmail.addMessage(ALICE, { threadId: a!.threadId, labelIds: ['SENT'] });
    const archivedUnread = mail.gmail.addMessage(ALICE, { threadId: b!.threadId });
    const archivedRead = mail.gmail.addMessage(ALICE, { threadId: c!.threadId, read: true });
    await mail.drain();
    mail.gmail.archive(ALICE, archivedUnread.id);
    mail.gmail.archive(ALICE, archivedRead.id);
    await mail.drain();
    const threadsOf = new Set([a!.threadId, b!.threadId, c!.threadId]);
    for (const m of mail.gmail.inbox(ALICE)) if (threadsOf.has(m.threadId)) mail.gmail.setRead(ALICE, m.id, true);
    await mail.drain();
    const before = await mail.stored();
    assert.deepEqual(
      [reply, archivedUnread, archivedRead].map((m) => before.get(m.id)?.in_inbox),
      [false, false, false],
      'stored outside the inbox',
    );

    // While nobody hears: the reply is deleted, the unread archived message read, the read one marked unread.
    mail.gmail.deleteMessage(ALICE, reply.id);
    mail.gmail.setRead(ALICE, archivedUnread.id, true);
    mail.gmail.setRead(ALICE, archivedRead.id, false);
    mail.gmail.expireHistory(ALICE);
    mail.gmail.resetCounters();
    const steps = await mail.drain();

    assert.deepEqual(
      steps.map((s) => s.hasMore),
      [false],
    );
    assert.equal(mail.gmail.calls['messages.list'], 3, 'the unread ids, the inbox ids, the ids outside the inbox');
    assert.equal(
      mail.gmail.calls['messages.get:metadata'],
      1,
      'only the stored message the listing outside the inbox did not name (404: deleted)',
    );
    const stored = await mail.stored();
    assert.equal(stored.get(reply.id), undefined, 'the deleted reply leaves the thread');
    assert.equal(stored.get(archivedUnread.id)?.is_unread, false);
    assert.equal(stored.get(archivedRead.id)?.is_unread, true);
    const threads = await mail.sql<{ provider_thread_id: string; is_unread: boolean; n: number }>(
      `select t.provider_thread_id, t.is_unread, (select count(*)::int from mail_messages m where m.thread_id = t.id) as n
       from mail_threads t where t.provider_thread_id = any(array[?]::text[])`,
      [[a!.threadId, b!.threadId, c!.threadId]],
    );
    const byThread = new Map(threads.map((x) => [x.provider_thread_id, x]));
    assert.equal(byThread.get(a!.threadId)?.n, 1, 'the thread holds what the provider holds');
    assert.equal(byThread.get(b!.threadId)?.is_unread, false, 'a stale unread row no longer keeps its thread unread');
    assert.equal(byThread.get(c!.threadId)?.is_unread, true);
    const labels = await mail.sql<{ label_ids: string[] }>(
      'select label_ids from mail_messages where provider_message_id = ?',
      [archivedRead.id],
    );
    assert.deepEqual(labels[0]?.label_ids.includes('UNREAD'), true, 'its labels say so too');

    // A second resync with nothing changed fetches nothing.
    mail.gmail.expireHistory(ALICE);
    mail.gmail.resetCounters();
    await mail.drain();
    assert.equal(mail.gmail.calls['messages.get:metadata'] ?? 0, 0);
  });

  it('a provider fault half-way through leaves nothing half-written; the next sync completes the work', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 120, { sentReplies: false });
    // Every fetch from the 26th on fails: the provider went down mid-call; nothing of the call is written.
    mail.gmail.injectFault({ endpoint: 'messages.get', status: 500, afterCalls: 25, times: Infinity });
    mail.gmail.injectFault({ endpoint: 'threads.get', status: 500, times: Infinity });
    const failed = await mail.sync();
    assert.equal(failed.status, 502);
    assert.equal((await failed.json()).error.code, 'SYNC_FAILED');
    const empty = await snapshot(mail);
    assert.equal(empty.messages.length, 0);
    assert.equal(empty.threads.length, 0);
    assert.deepEqual((await mail.getJson('/api/mail/sync-state')).body, { lastSyncedAt: null });
    mail.gmail.clearFaults();

    const ok = await mail.syncOk();
    assert.equal(ok.messagesSynced, 50);
    await mail.drain();
    assert.equal((await mail.stored()).size, 120);

    // The same in incremental mode: checkpoint and data stay exactly as they were.
    for (let i = 0; i < 4; i++) mail.gmail.addMessage(ALICE, { subject: `later ${i}` });
    const before = await snapshot(mail);
    mail.gmail.injectFault({ endpoint: 'messages.get', status: 503, times: Infinity });
    assert.equal((await mail.sync()).status, 502);
    assert.deepEqual(await snapshot(mail), before);
    mail.gmail.clearFaults();
    const done = await mail.syncOk();
    assert.equal(done.messagesSynced, 4);
    assert.equal((await mail.stored()).size, 124);
  });

  it('a database failure inside the commit rolls back the data and the checkpoint together', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 30, { sentReplies: false });
    await mail.drain();
    // A trigger that fails the message write, after the checkpoint update ran in the same transaction.
    await mail.sql(
      `create function boom() returns trigger language plpgsql as $$ begin if new.subject = 'BOOM' then raise exception 'boom'; end if; return new; end $$`,
    );
    await mail.sql('create trigger boom before insert or update on mail_messages for each row execute function boom()');
    mail.gmail.addMessage(ALICE, { subject: 'fine' });
    mail.gmail.addMessage(ALICE, { subject: 'BOOM' });
    const before = await snapshot(mail);
    const res = await mail.sync();
    assert.equal(res.status, 500);
    assert.deepEqual(await snapshot(mail), before);
    await mail.sql('drop trigger boom on mail_messages');
    const r = await mail.syncOk();
    assert.equal(r.messagesSynced, 2);
    assert.equal((await mail.stored()).size, 32);
  });

  it('a sync that lost its lease while it began a listing leaves the listing that replaced it whole', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 6, { sentReplies: false });
    await mail.drain();
    const { id: accountId } = (await mail.app.account({ email: ALICE }))!;
    // The history goes with mail the store does not know: a listing begins, its unknown ids kept to fetch later.
    for (let i = 0; i < 6; i++) mail.gmail.addMessage(ALICE, { subject: `unseen ${i}` });
    mail.gmail.expireHistory(ALICE);
    const real = createGmailFactory({ rootUrl: mail.gmail.url });
    /** Runs once, right after the next history read answers (before its sync plans on). */
    let afterHistory: (() => Promise<void>) | null = null;
    const gmail: GmailFactory = (auth, key) => {
      const api = real(auth, key);
      return Object.assign(Object.create(api) as typeof api, {
        async listHistory(id: string) {
          const answer = await api.listHistory(id);
          const hook = afterHistory;
          afterHistory = null;
          await hook?.();
          return answer;
        },
      });
    };
    const { orm, credentials, log } = mail.app.container;
    const syncs = createSyncService({ orm, gmail, credentials, log });
    const small = { maxMessages: 2 };
    assert.equal((await syncs.syncAccount(accountId, small)).hasMore, true);
    const pending = async () =>
      (await mail.sql<{ n: number }>('select count(*)::int as n from mail_listing where pending'))[0]!.n;
    assert.equal(await pending(), 4, 'the listing keeps the ids it did not fetch yet');

    // Its history goes too. A sync reads that, and loses its lease to another one, which begins a new listing and commits it.
    mail.gmail.addMessage(ALICE, { subject: 'after the listing began' });
    mail.gmail.expireHistory(ALICE);
    afterHistory = async () => {
      await mail.sql("update sync_states set lease_until = now() - interval '1 second'");
      await syncs.syncAccount(accountId, small);
    };
    await assert.rejects(
      syncs.syncAccount(accountId, small),
      (err: Error & { code?: string }) => err.code === 'SYNC_FAILED',
      'the sync that lost its lease commits nothing',
    );
    assert.equal(
      await pending(),
      3,
      "the new listing's ids stand: the sync that lost its lease began a listing too, and cleared none",
    );

    await mail.drain();
    const inbox = mail.gmail
      .inbox(ALICE)
      .map((m) => m.id)
      .sort();
    assert.deepEqual([...(await mail.stored()).keys()].sort(), inbox, 'every inbox message stored, none twice');
  });
});
