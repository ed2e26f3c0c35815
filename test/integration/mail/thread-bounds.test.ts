/**
 * What one opened thread may cost everyone else (issue 31): the provider's answer is capped
 * before it is decoded, concurrent opens of one thread share one fetch and parse, a failure is
 * remembered for a while, the body worker's queue is bounded, and the detail answer carries at
 * most a budget of bodies. Small bounds are passed in, so the inputs stay small.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALICE, allThreads, startMailApp } from './mail-app.ts';

describe('thread bounds', () => {
  it('an answer over the cap is the provider failure of the route, read no further and stored nowhere', async (t) => {
    const mail = await startMailApp(t, { overrides: { mailBodies: { parser: { maxAnswerBytes: 64 * 1024 } } } });
    const big = mail.gmail.addMessage(ALICE, { subject: 'Big', bodyText: 'lorem ipsum '.repeat(10_000) }); // ~160 KB of base64
    mail.gmail.addMessage(ALICE, { subject: 'Small', bodyText: 'fine' });
    await mail.drain();
    const threads = await allThreads(mail);
    const bigThread = threads.find((th) => th.mailThreadId === big.threadId);
    const smallThread = threads.find((th) => th.mailThreadId !== big.threadId);

    const refused = await mail.getJson(`/api/mail/threads/${bigThread.id}`);
    assert.equal(refused.status, 502, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'SYNC_FAILED');
    const [{ n }] = await mail.sql<{ n: number }>('select count(*)::int as n from mail_messages where body_fetched_at is not null');
    assert.equal(n, 0);
    const fine = await mail.getJson(`/api/mail/threads/${smallThread.id}`);
    assert.equal(fine.status, 200);
    assert.equal(fine.body.messages[0].bodyText, 'fine');
  });
});
