/**
 * Strings from mail (runtime contract §4): whatever a message holds — U+0000, lone
 * surrogates, a nonsense date — the sync stores it and every route serves it without either,
 * and no sync fails over it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALICE, startMailApp } from './mail-app.ts';

const hostile = (s: string) =>
  s.includes('\u0000') || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

describe('strings from mail', () => {
  it('a message with NULs and lone surrogates in its headers, snippet, bodies and attachment names is stored and served without them', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.addMessage(ALICE, {
      subject: 'Invoice\u0000 #\ud800 due',
      from: { name: 'Mallory\u0000 \udfff', address: 'mallory@example.com' },
      snippet: 'snip\u0000pet \ud83d',
      bodyText: 'text\u0000 body \udc00 end',
      bodyHtml: '<p>html\u0000 body \ud800</p>',
      attachments: [{ filename: 'evil\u0000\ud800.pdf', mimeType: 'application/pdf', size: 10 }],
    });
    const sync = await mail.syncOk();
    assert.equal(sync.messagesSynced, 1, 'stored, not failed');
    const list = await (await mail.browser.fetch('/api/mail/threads')).json();
    const thread = list.threads[0];
    assert.equal(thread.subject, 'Invoice #\ufffd due');
    assert.ok(!hostile(JSON.stringify(list)) && !JSON.stringify(list).includes('\\u0000'));
    const res = await mail.browser.fetch(`/api/mail/threads/${thread.id}`);
    assert.equal(res.status, 200);
    const raw = await res.text();
    assert.ok(
      !raw.includes('\\u0000') && !/\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])/i.test(raw),
      'no NUL and no lone surrogate on the wire',
    );
    const detail = JSON.parse(raw);
    const m = detail.messages[0];
    assert.equal(m.fromName, 'Mallory \ufffd');
    assert.match(m.bodyText, /^text body \ufffd end/);
    assert.ok(!hostile(m.bodyHtml) && m.bodyHtml.includes('html body'));
    assert.deepEqual(
      m.attachments.map((a: { filename: string }) => a.filename),
      ['evil\ufffd.pdf'],
    );
  });
});
