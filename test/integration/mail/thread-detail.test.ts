import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BODY_BYTES_PER_STATEMENT } from '../../../server/domain/mail/threads/body-chunks.ts';
import { SANITIZER_VERSION } from '../../../server/providers/mail/message-body.ts';
import { ALICE, allThreads, startMailApp } from './mail-app.ts';

const HOSTILE_HTML =
  '<div><p onclick="steal()">Hello <b>there</b></p><script>alert(1)</script>' +
  '<a href="javascript:alert(2)">click</a> <a href="https://example.com/ok">fine</a>' +
  '<img src="https://example.com/x.png" onerror="steal()"><iframe src="https://evil.test"></iframe>' +
  '<style>body{display:none}</style><form action="https://evil.test"><input name="p"></form></div>';

describe('thread detail', () => {
  it('fetches bodies once per thread when opened, serves them from the store afterwards', async (t) => {
    const mail = await startMailApp(t);
    const first = mail.gmail.addMessage(ALICE, {
      subject: 'Invoice',
      from: { name: 'Dana Billing', address: 'dana@example.net' },
      bodyText: 'Plain version',
      bodyHtml: HOSTILE_HTML,
      attachments: [{ filename: 'invoice.pdf', mimeType: 'application/pdf', size: 48_213 }],
    });
    const sent = mail.gmail.addSentReply(ALICE, first.threadId, { bodyText: 'Thanks!', read: true });
    const htmlOnly = mail.gmail.addMessage(ALICE, {
      threadId: first.threadId,
      bodyText: null,
      bodyHtml: '<p>Second&nbsp;line &amp; more</p><p>Next paragraph</p>',
    });
    await mail.drain();
    const [thread] = await allThreads(mail);
    assert.equal(thread.mailThreadId, first.threadId);

    mail.gmail.resetCounters();
    const opened = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(opened.status, 200, JSON.stringify(opened.body));
    assert.equal(mail.gmail.calls['threads.get:full'], 1, 'one provider call for the whole thread');
    assert.equal(mail.gmail.calls['messages.get'], 0);
    assert.equal(mail.gmail.calls['attachments.get'], 0, 'attachment content is never fetched');

    const d = opened.body;
    assert.equal(d.id, thread.id);
    assert.equal(d.mailThreadId, first.threadId);
    assert.equal(d.subject, 'Invoice');
    assert.equal(d.isUnread, true);
    assert.deepEqual(
      d.messages.map((m: any) => m.subject),
      ['Invoice', 'Re: Invoice', 'Re: Invoice'],
      'every message, sent replies included, oldest first',
    );
    const [m1, m2, m3] = d.messages;
    assert.equal(m1.threadId, thread.id);
    assert.equal(m1.fromName, 'Dana Billing');
    assert.equal(m1.fromAddress, 'dana@example.net');
    assert.equal(m1.sentAt, new Date(first.internalDate).toISOString());
    assert.equal(m1.bodyText, 'Plain version');
    assert.deepEqual(m1.attachments, [{ filename: 'invoice.pdf', mimeType: 'application/pdf', size: 48_213 }]);
    for (const bad of [
      '<script',
      'alert(1)',
      'onclick',
      'onerror',
      'javascript:',
      '<iframe',
      '<style',
      '<form',
      '<input',
      'steal()',
    ]) {
      assert.equal(m1.bodyHtml.includes(bad), false, `sanitised HTML still contains ${bad}: ${m1.bodyHtml}`);
    }
    assert.match(m1.bodyHtml, /<b>there<\/b>/);
    assert.match(m1.bodyHtml, /href="https:\/\/example.com\/ok"/);
    assert.match(
      m1.bodyHtml,
      /<img data-remote-src="https:\/\/example.com\/x.png" \/?>/,
      'a remote image kept, not loadable as delivered',
    );
    assert.equal(m2.fromAddress, ALICE);
    assert.equal(m2.bodyText.startsWith('Thanks!'), true);
    assert.equal(m2.bodyHtml, '', 'no HTML part: empty string');
    assert.equal(m2.isUnread, false);
    assert.equal(sent.labelIds.includes('INBOX'), false);
    assert.equal(
      m3.bodyText,
      'Second line & more\nNext paragraph',
      'plain text derived from HTML when only HTML exists',
    );
    assert.equal(m3.bodyHtml, '<p>Second\u00a0line &amp; more</p><p>Next paragraph</p>');
    assert.equal(m3.id !== m1.id && htmlOnly.id !== first.id, true);
    assert.deepEqual(m3.attachments, []);

    const again = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.deepEqual(again.body, d);
    assert.equal(mail.gmail.calls['threads.get'], 1, 'served from the store the second time');

    // A new message joins the thread: the next open fetches the thread again, once.
    const later = mail.gmail.addMessage(ALICE, { threadId: first.threadId, bodyText: 'One more thing' });
    await mail.syncOk();
    const reopened = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(reopened.body.messages.length, 4);
    assert.equal(reopened.body.messages[3].bodyText, 'One more thing');
    assert.equal(reopened.body.messages[3].sentAt, new Date(later.internalDate).toISOString());
    await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(mail.gmail.calls['threads.get:full'], 2);

    // A body stored by an older sanitiser (or before versions were kept) is never served as it
    // was: the next open fetches and sanitises the thread again, once.
    const stored = await mail.sql<{ v: number | null }>(
      'select distinct body_sanitizer as v from mail_messages where thread_id = ?',
      [thread.id],
    );
    assert.deepEqual(
      stored.map((r) => r.v),
      [SANITIZER_VERSION],
      'every stored body carries the current version',
    );
    await mail.sql(
      `update mail_messages set body_html = '<img src="https://example.com/x.png">', body_sanitizer = 0 where thread_id = ? and provider_message_id = ?`,
      [thread.id, first.id],
    );
    const resanitised = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(mail.gmail.calls['threads.get:full'], 3, 'the old body made the open fetch again');
    assert.match(resanitised.body.messages[0].bodyHtml, /<img data-remote-src="https:\/\/example.com\/x.png" \/?>/);
    assert.ok(!/ src="https:/.test(resanitised.body.messages[0].bodyHtml), 'the old, loadable form is not served');
    await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(mail.gmail.calls['threads.get:full'], 3, 'current again: served from the store');
  });

  it('a provider failure while opening maps to the spec codes and caches nothing', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.addMessage(ALICE, { subject: 'Hello', bodyText: 'Body' });
    await mail.drain();
    const [thread] = await allThreads(mail);
    mail.gmail.injectFault({ endpoint: 'threads.get', status: 429, retryAfterSeconds: 3 });
    const limited = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'MAIL_RATE_LIMITED');
    assert.equal(limited.res.headers.get('retry-after'), '3');
    mail.gmail.injectFault({ endpoint: 'threads.get', status: 0, garbage: true });
    const broken = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(broken.status, 502);
    assert.equal(broken.body.error.code, 'SYNC_FAILED');
    const [{ n }] = await mail.sql<{ n: number }>(
      'select count(*)::int as n from mail_messages where body_fetched_at is not null',
    );
    assert.equal(n, 0);
    const ok = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.messages[0].bodyText, 'Body');
  });

  it('the AI feature can ensure bodies through the container slot', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.addMessage(ALICE, { subject: 'For the model', bodyText: 'Please review' });
    await mail.drain();
    const [thread] = await allThreads(mail);
    const { id: accountId } = (await mail.app.account({ email: ALICE }))!;
    const em = mail.app.container.orm.em.fork();
    await mail.app.container.threadBodies.ensure(em, accountId, thread.id);
    const [{ body_text }] = await mail.sql<{ body_text: string }>('select body_text from mail_messages');
    assert.equal(body_text, 'Please review');
    await assert.rejects(
      mail.app.container.threadBodies.ensure(em, '6f9619ff-8b86-4d01-b42d-00cf4fc964ff', thread.id),
      { code: 'NOT_FOUND' },
    );
    await assert.rejects(mail.app.container.threadBodies.ensure(em, accountId, 'nope'), { code: 'NOT_FOUND' });
  });

  it("stores a big thread's bodies in several statements, each message whole", async (t) => {
    // About statements, not the parse's time limit: a loaded machine must not drop the big HTML for lack of time.
    const mail = await startMailApp(t, { overrides: { mailBodies: { parser: { timeoutMs: 600_000 } } } });
    // Eight messages of about 300,000 characters each: more than two statements' worth of bodies.
    const bodies = Array.from({ length: 8 }, (_, i) => ({
      text: `text ${i} `.repeat(20_000),
      html: `<p>html ${i}</p>`.repeat(12_000),
    }));
    const first = mail.gmail.addMessage(ALICE, {
      subject: 'Big',
      bodyText: bodies[0]!.text,
      bodyHtml: bodies[0]!.html,
    });
    for (const b of bodies.slice(1))
      mail.gmail.addMessage(ALICE, { threadId: first.threadId, bodyText: b.text, bodyHtml: b.html });
    assert.ok(bodies.reduce((n, b) => n + b.text.length + b.html.length, 0) > 2 * BODY_BYTES_PER_STATEMENT);
    await mail.drain();
    const [thread] = await allThreads(mail);
    assert.equal((await mail.browser.fetch(`/api/mail/threads/${thread.id}`)).status, 200);
    const stored = await mail.sql<{ body_text: string; body_html: string }>(
      'select body_text, body_html from mail_messages where thread_id = ? order by sent_at, provider_message_id',
      [thread.id],
    );
    assert.equal(stored.length, 8);
    for (const [i, row] of stored.entries()) {
      assert.ok(
        row.body_text.startsWith(`text ${i} `) && row.body_text.length >= bodies[i]!.text.trimEnd().length,
        `message ${i}: its whole text`,
      );
      assert.ok(
        row.body_html.includes(`html ${i}`) && row.body_html.split(`html ${i}`).length - 1 === 12_000,
        `message ${i}: its whole HTML`,
      );
    }
  });
});
