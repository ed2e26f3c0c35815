import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { signIn } from '../../helpers/providers.ts';
import { ALICE, allThreads, startMailApp } from './mail-app.ts';

describe('thread list', () => {
  it('pages newest first with total and hasMore, and validates limit and offset strictly', async (t) => {
    const mail = await startMailApp(t);
    for (let i = 0; i < 25; i++)
      mail.gmail.addMessage(ALICE, { subject: `Message ${i}`, internalDate: Date.UTC(2026, 0, 1, 0, i) });
    await mail.drain();
    const expected = mail.gmail.inbox(ALICE).map((m) => m.threadId);

    const first = await mail.getJson('/api/mail/threads');
    assert.equal(first.status, 200);
    assert.equal(first.body.threads.length, 20, 'default limit 20');
    assert.equal(first.body.total, 25);
    assert.equal(first.body.hasMore, true);
    assert.deepEqual(
      first.body.threads.map((x: any) => x.mailThreadId),
      expected.slice(0, 20),
    );
    assert.equal(first.body.threads[0].subject, 'Message 24');
    assert.equal(first.body.threads[0].lastMessageAt, new Date(Date.UTC(2026, 0, 1, 0, 24)).toISOString());
    assert.equal(first.body.threads[0].isUnread, true);
    assert.deepEqual(Object.keys(first.body.threads[0]).sort(), [
      'analysis',
      'fromAddress',
      'fromName',
      'id',
      'isUnread',
      'lastMessageAt',
      'mailThreadId',
      'snippet',
      'subject',
    ]);
    const newest = mail.gmail.inbox(ALICE)[0]!;
    assert.deepEqual(
      [first.body.threads[0].fromName, first.body.threads[0].fromAddress],
      [newest.from.name, newest.from.address],
    );

    const rest = await mail.getJson('/api/mail/threads?limit=20&offset=20');
    assert.deepEqual(
      rest.body.threads.map((x: any) => x.mailThreadId),
      expected.slice(20),
    );
    assert.equal(rest.body.hasMore, false);
    const exact = await mail.getJson('/api/mail/threads?limit=5&offset=20');
    assert.equal(exact.body.hasMore, false);
    const beyond = await mail.getJson('/api/mail/threads?offset=1000');
    assert.deepEqual(beyond.body, { threads: [], total: 25, hasMore: false });
    const edges = await mail.getJson('/api/mail/threads?limit=100&offset=0');
    assert.equal(edges.body.threads.length, 25);
    assert.equal((await mail.getJson('/api/mail/threads?limit=1')).body.threads.length, 1);

    for (const query of [
      'limit=0',
      'limit=101',
      'limit=-1',
      'limit=abc',
      'limit=1.5',
      'limit=',
      'limit=1e1',
      'offset=-1',
      'offset=abc',
      'offset=1.5',
      'other=1',
    ]) {
      const r = await mail.getJson(`/api/mail/threads?${query}`);
      assert.equal(r.status, 400, query);
      assert.equal(r.body.error.code, 'VALIDATION_FAILED', query);
      const field = query.split('=')[0];
      assert.ok(
        r.body.error.details.issues.some((i: { path: string }) => i.path === field),
        `${query}: ${JSON.stringify(r.body.error.details)}`,
      );
    }
    // The typed client path takes numbers, and refuses strings that are not whole numbers.
    const trpc = await mail.browser.fetch(
      `/trpc/mail.threads?input=${encodeURIComponent(JSON.stringify({ limit: 3, offset: 1 }))}`,
    );
    assert.equal(trpc.status, 200);
    assert.deepEqual(
      (await trpc.json()).result.data.threads.map((x: any) => x.mailThreadId),
      expected.slice(1, 4),
    );
    const bad = await mail.browser.fetch(
      `/trpc/mail.threads?input=${encodeURIComponent(JSON.stringify({ limit: 'abc' }))}`,
    );
    assert.equal(bad.status, 400);

    const doc = await (await mail.browser.fetch('/openapi.json')).json();
    for (const [path, method] of [
      ['/api/mail/sync', 'post'],
      ['/api/mail/sync-state', 'get'],
      ['/api/mail/threads', 'get'],
      ['/api/mail/threads/{threadId}', 'get'],
    ]) {
      assert.ok(doc.paths[path]?.[method], `${method} ${path} documented`);
    }
    const params = doc.paths['/api/mail/threads'].get.parameters.map(
      (p: { name: string; in: string }) => `${p.in}:${p.name}`,
    );
    assert.deepEqual(params.sort(), [
      'query:limit',
      'query:offset',
      'query:priority',
      'query:replyStatus',
      'query:unread',
    ]);
  });

  it("shows who wrote the message that dates the thread: the owner's sent reply does not, a newer inbox message does", async (t) => {
    const mail = await startMailApp(t);
    const bob = mail.gmail.addMessage(ALICE, {
      from: { name: 'Bob Example', address: 'bob@partner.example' },
      internalDate: Date.UTC(2026, 0, 1),
    });
    await mail.drain();
    const sender = async () => {
      const { threads } = (await mail.getJson('/api/mail/threads')).body;
      return [threads[0].fromName, threads[0].fromAddress];
    };
    assert.deepEqual(await sender(), ['Bob Example', 'bob@partner.example']);
    mail.gmail.addSentReply(ALICE, bob.threadId, { internalDate: Date.UTC(2026, 0, 2) });
    await mail.drain();
    assert.deepEqual(await sender(), ['Bob Example', 'bob@partner.example'], 'a sent reply is not in the inbox');
    mail.gmail.addMessage(ALICE, {
      threadId: bob.threadId,
      from: { name: '', address: 'carol@partner.example' },
      internalDate: Date.UTC(2026, 0, 3),
    });
    await mail.drain();
    assert.deepEqual(await sender(), ['', 'carol@partner.example']);
  });

  it('needs a session; sync-state needs a session and spends no provider quota', async (t) => {
    const mail = await startMailApp(t);
    const anonymous = mail.app.browser();
    for (const path of [
      '/api/mail/threads',
      '/api/mail/sync-state',
      '/api/mail/threads/6f9619ff-8b86-4d01-b42d-00cf4fc964ff',
    ]) {
      const r = await mail.getJson(path, anonymous);
      assert.equal(r.status, 401, path);
      assert.equal(r.body.error.code, 'AUTH_REQUIRED');
    }
    mail.gmail.resetCounters();
    const state = await mail.getJson('/api/mail/sync-state');
    assert.deepEqual(state.body, { lastSyncedAt: null });
    assert.equal(mail.gmail.requests.length, 0);
    const noCsrf = await mail.browser.fetch('/api/mail/sync', { method: 'POST' });
    assert.equal(noCsrf.status, 403);
    assert.equal((await noCsrf.json()).error.code, 'CSRF_FAILED');
    const otherOrigin = await mail.browser.fetch('/api/mail/sync', {
      method: 'POST',
      headers: { 'X-CSRF-Token': mail.csrfToken, Origin: 'http://evil.test' },
    });
    assert.equal(otherOrigin.status, 403);
    const withBody = await mail.browser.fetch('/api/mail/sync', {
      method: 'POST',
      headers: { 'X-CSRF-Token': mail.csrfToken, Origin: WEB_ORIGIN },
      json: { force: true },
    });
    assert.equal(withBody.status, 400);
    assert.equal(mail.gmail.requests.length, 0);
  });

  it("another account's thread is NOT_FOUND; a malformed id is VALIDATION_FAILED", async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.addMessage(ALICE, { subject: 'Only for Alice' });
    await mail.drain();
    const [aliceThread] = await allThreads(mail);

    mail.providers.identity.setCurrentUser({ sub: 'bob-sub', email: 'bob@example.com' });
    const bob = mail.app.browser();
    await signIn(bob);
    mail.gmail.addMessage('bob@example.com', { subject: 'Only for Bob' });
    const bobSync = await mail.sync(bob, (await (await bob.fetch('/auth/session')).json()).csrfToken);
    assert.equal(bobSync.status, 200);
    const bobList = await mail.getJson('/api/mail/threads', bob);
    assert.deepEqual(
      bobList.body.threads.map((x: any) => x.subject),
      ['Only for Bob'],
    );

    mail.gmail.resetCounters();
    const stolen = await mail.getJson(`/api/mail/threads/${aliceThread.id}`, bob);
    assert.equal(stolen.status, 404);
    assert.equal(stolen.body.error.code, 'NOT_FOUND');
    assert.equal(mail.gmail.requests.length, 0, 'no provider call for a thread that is not yours');
    const unknown = await mail.getJson('/api/mail/threads/6f9619ff-8b86-4d01-b42d-00cf4fc964ff', bob);
    assert.equal(unknown.status, 404);
    for (const id of ['not-a-uuid', '123', `${aliceThread.id}x`]) {
      const r = await mail.getJson(`/api/mail/threads/${id}`, bob);
      assert.equal(r.status, 400, id);
      assert.equal(r.body.error.code, 'VALIDATION_FAILED');
    }
    const mine = await mail.getJson(`/api/mail/threads/${aliceThread.id}`);
    assert.equal(mine.status, 200);
    assert.equal(mine.body.subject, 'Only for Alice');
  });
});
