/**
 * Opening a stored thread again is cheap (issue 31's bench goal): its bodies are served from
 * memory, already serialised, while they stay as stored, and the answer is the same JSON on
 * REST and /trpc as the object the service builds. The body budget counts the bytes PostgreSQL
 * stores (it knows them without decompressing the bodies), so at most as many characters.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALICE, allThreads, startMailApp } from './mail-app.ts';

const TEXT = 'Line "one"\n\tTab, backslash \\ and </script> — é ü 漢字 😀 \u2028 end';
const HTML =
  '<p class="a" title="it\'s">Quoted "HTML" &amp; <a href="https://example.com/?a=1&amp;b=2">link</a> 😀</p>';

describe('thread cache', () => {
  it('a reopened thread is served from memory while its bodies stay as stored, the same on REST and /trpc', async (t) => {
    const mail = await startMailApp(t);
    const first = mail.gmail.addMessage(ALICE, {
      subject: 'Cached',
      bodyText: TEXT,
      bodyHtml: HTML,
      attachments: [{ filename: 'a "b".pdf', mimeType: 'application/pdf', size: 12 }],
    });
    mail.gmail.addMessage(ALICE, { threadId: first.threadId, bodyText: 'second', bodyHtml: null });
    await mail.drain();
    const [thread] = await allThreads(mail);
    const path = `/api/mail/threads/${thread.id}`;

    const opened = await mail.browser.fetch(path);
    const text = await opened.text();
    assert.equal(opened.status, 200, text);
    assert.equal(opened.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(Number(opened.headers.get('content-length')), Buffer.byteLength(text));
    const d = JSON.parse(text);
    assert.equal(d.messages[0].bodyText, TEXT);
    assert.match(d.messages[0].bodyHtml, /Quoted "HTML"/);
    assert.deepEqual(d.messages[0].attachments, [{ filename: 'a "b".pdf', mimeType: 'application/pdf', size: 12 }]);
    assert.equal(d.messages[1].bodyText, 'second');
    assert.deepEqual(Object.keys(d.messages[0]), [
      'id',
      'threadId',
      'fromName',
      'fromAddress',
      'subject',
      'snippet',
      'sentAt',
      'isUnread',
      'bodyText',
      'bodyHtml',
      'attachments',
      'bodyOmitted',
    ]);

    const cached = await mail.browser.fetch(path);
    assert.equal(await cached.text(), text, 'served from memory: the same bytes');
    const input = encodeURIComponent(JSON.stringify({ threadId: thread.id }));
    const viaTrpc = await mail.browser.fetch(`/trpc/mail.thread?input=${input}`);
    assert.equal(viaTrpc.status, 200);
    assert.deepEqual((await viaTrpc.json()).result.data, d, '/trpc answers the same thread');

    // Stored bodies never change in place: only storing them again (a refetch, a newer
    // sanitiser) moves body_fetched_at. An edit that does not is not seen (the memory answers)…
    await mail.sql(
      `update mail_messages set body_text = 'edited in place' where thread_id = ? and provider_message_id = ?`,
      [thread.id, first.id],
    );
    assert.equal((await mail.getJson(path)).body.messages[0].bodyText, TEXT);
    // …a body stored again is served as stored.
    await mail.sql(
      `update mail_messages set body_text = 'stored again', body_fetched_at = now() where thread_id = ? and provider_message_id = ?`,
      [thread.id, first.id],
    );
    const restored = await mail.getJson(path);
    assert.equal(restored.body.messages[0].bodyText, 'stored again');
    assert.equal(restored.body.messages[1].bodyText, 'second');

    // Opens of one account at once (tabs, clients) are answered one after another, all of them.
    const together = await Promise.all(Array.from({ length: 5 }, () => mail.getJson(path)));
    assert.deepEqual(
      together.map((r) => r.status),
      [200, 200, 200, 200, 200],
    );
    assert.ok(together.every((r) => r.body.messages[0].bodyText === 'stored again'));

    const { id: accountId } = (await mail.app.account({ email: ALICE }))!;
    const inProcess = await mail.app.container.services.threads.detail(
      mail.app.container.orm.em.fork(),
      accountId,
      thread.id,
    );
    assert.equal(inProcess.messages[0].bodyText, 'stored again', 'in-process callers read plain strings');
    assert.deepEqual(JSON.parse(JSON.stringify(inProcess)), restored.body);
  });

  it('the body budget counts the bytes stored, so a thread answer holds at most as many characters', async (t) => {
    // Each body: 15 characters, 30 bytes of UTF-8. The newest two fill 60 bytes; the oldest is left out.
    const mail = await startMailApp(t, { overrides: { mailBodies: { threadBodyBudget: 60 } } });
    const first = mail.gmail.addMessage(ALICE, { subject: 'Accents', bodyText: 'é'.repeat(15), bodyHtml: null });
    for (let i = 0; i < 2; i++)
      mail.gmail.addMessage(ALICE, { threadId: first.threadId, bodyText: 'ü'.repeat(15), bodyHtml: null });
    await mail.drain();
    const [thread] = await allThreads(mail);
    const opened = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(opened.status, 200);
    assert.deepEqual(
      opened.body.messages.map((m: any) => m.bodyOmitted),
      [true, false, false],
    );
    assert.deepEqual(
      opened.body.messages.map((m: any) => m.bodyText),
      ['', 'ü'.repeat(15), 'ü'.repeat(15)],
    );
  });
});
