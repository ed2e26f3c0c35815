/**
 * What one opened thread may cost everyone else (issue 31): the provider's answer is capped
 * before it is decoded, concurrent opens of one thread share one fetch and parse, a failure is
 * remembered for a while, the body worker's queue is bounded, bodies are stored as they are parsed,
 * and the detail answer carries at most a budget of bodies. Small bounds are passed in, so the inputs stay small.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renderMessage } from '../../../stand-ins/gmail/message.wire.ts';
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
    const [{ n }] = await mail.sql<{ n: number }>(
      'select count(*)::int as n from mail_messages where body_fetched_at is not null',
    );
    assert.equal(n, 0);
    const fine = await mail.getJson(`/api/mail/threads/${smallThread.id}`);
    assert.equal(fine.status, 200);
    assert.equal(fine.body.messages[0].bodyText, 'fine');
  });

  it('bodies are stored as they are parsed: an answer malformed after two good messages keeps those two, the thread row untouched', async (t) => {
    const mail = await startMailApp(t, { overrides: { mailBodies: { parser: { inlineBytes: 1024 } } } }); // parsed on the worker
    const first = mail.gmail.addMessage(ALICE, { subject: 'Three', bodyText: 'one '.repeat(500) });
    const second = mail.gmail.addMessage(ALICE, { threadId: first.threadId, bodyText: 'two '.repeat(500) });
    const third = mail.gmail.addMessage(ALICE, { threadId: first.threadId, bodyText: 'three '.repeat(500) });
    await mail.drain();
    const [thread] = await allThreads(mail);
    const wire = (m: { id: string }) =>
      renderMessage(mail.gmail.getMessage(ALICE, m.id)!, 'full') as Record<string, unknown>;
    const answer = {
      id: first.threadId,
      historyId: '1',
      messages: [wire(first), wire(second), { ...wire(third), id: 5 }],
    };
    const threadRow = async () =>
      (await mail.sql<{ at: string }>('select updated_at::text as at from mail_threads where id = ?', [thread.id]))[0]!
        .at;
    const rowBefore = await threadRow();
    mail.gmail.injectFault({ endpoint: 'threads.get', status: 200, garbage: JSON.stringify(answer) });
    const refused = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(refused.status, 502, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'SYNC_FAILED');
    const fetched = async () =>
      (
        await mail.sql<{ pmid: string }>(
          'select provider_message_id as pmid from mail_messages where body_fetched_at is not null order by sent_at',
        )
      ).map((r) => r.pmid);
    assert.deepEqual(
      await fetched(),
      [first.id, second.id],
      'each message before the malformed one was whole, and is kept',
    );
    const opened = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(opened.status, 200);
    assert.deepEqual(
      opened.body.messages.map((m: any) => m.bodyText.split(' ')[0]),
      ['one', 'two', 'three'],
    );
    assert.deepEqual(await fetched(), [first.id, second.id, third.id]);
    assert.equal(
      await threadRow(),
      rowBefore,
      'bodies alone leave the thread row as it was: no aggregate depends on them',
    );
  });

  it('concurrent opens of one thread share one fetch, parse and store, and its failure', async (t) => {
    const mail = await startMailApp(t);
    const first = mail.gmail.addMessage(ALICE, { subject: 'Shared', bodyText: 'once' });
    mail.gmail.addMessage(ALICE, { threadId: first.threadId, bodyText: 'twice' });
    await mail.drain();
    const [thread] = await allThreads(mail);
    const { id: accountId } = (await mail.app.account({ email: ALICE }))!;
    const { threadBodies, orm } = mail.app.container;
    const open = () => threadBodies.ensure(orm.em.fork(), accountId, thread.id);

    mail.gmail.injectFault({ endpoint: 'threads.get', status: 500 });
    mail.gmail.resetCounters();
    const failed = await Promise.allSettled(Array.from({ length: 5 }, open));
    assert.deepEqual(
      failed.map((r) => r.status === 'rejected' && (r.reason as { code?: string }).code),
      Array(5).fill('SYNC_FAILED'),
    );
    assert.equal(mail.gmail.calls['threads.get:full'], 1, 'five opens, one provider call');

    await Promise.all(Array.from({ length: 5 }, open));
    assert.equal(mail.gmail.calls['threads.get:full'], 2, 'a 500 is not remembered; five more opens, one more call');
    const [{ n }] = await mail.sql<{ n: number }>(
      'select count(*)::int as n from mail_messages where body_fetched_at is not null',
    );
    assert.equal(n, 2);
    // Another account's open of this thread neither joins the flight nor sees the thread.
    await assert.rejects(threadBodies.ensure(orm.em.fork(), '6f9619ff-8b86-4d01-b42d-00cf4fc964ff', thread.id), {
      code: 'NOT_FOUND',
    });
  });

  it('an answer that cannot be used is remembered for failureTtlMs, then fetched again', async (t) => {
    let clock = 1_000_000;
    const mail = await startMailApp(t, {
      overrides: {
        mailBodies: { parser: { maxAnswerBytes: 16 * 1024 }, opens: { failureTtlMs: 30_000, now: () => clock } },
      },
    });
    mail.gmail.addMessage(ALICE, { subject: 'Huge', bodyText: 'lorem ipsum '.repeat(5_000) });
    await mail.drain();
    const [thread] = await allThreads(mail);
    mail.gmail.resetCounters();
    for (let i = 0; i < 3; i++) {
      const refused = await mail.getJson(`/api/mail/threads/${thread.id}`);
      assert.equal(refused.status, 502);
      assert.equal(refused.body.error.code, 'SYNC_FAILED');
      clock += 10_000;
    }
    assert.equal(
      mail.gmail.calls['threads.get:full'],
      1,
      'reopened within 30 s: answered from memory, no fetch and no parse',
    );
    const again = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(again.status, 502);
    assert.equal(mail.gmail.calls['threads.get:full'], 2, 'after 30 s the thread is fetched again');
  });

  it('a thread answer carries its newest bodies up to the budget; the others are asked for one by one', async (t) => {
    const mail = await startMailApp(t, { overrides: { mailBodies: { threadBodyBudget: 60 } } });
    const first = mail.gmail.addMessage(ALICE, { subject: 'Long thread', bodyText: 'oldest body, twenty+' });
    for (const n of [2, 3, 4])
      mail.gmail.addMessage(ALICE, { threadId: first.threadId, bodyText: `message number ${n} body.` });
    const other = mail.gmail.addMessage(ALICE, { subject: 'Elsewhere', bodyText: 'other thread' });
    await mail.drain();
    const threads = await allThreads(mail);
    const thread = threads.find((th) => th.mailThreadId === first.threadId);
    const elsewhere = threads.find((th) => th.mailThreadId === other.threadId);

    const opened = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(opened.status, 200, JSON.stringify(opened.body));
    const messages = opened.body.messages;
    // Each body is 20-24 characters (text only): the newest two fit in 60, the older two are left out.
    assert.deepEqual(
      messages.map((m: any) => m.bodyOmitted),
      [true, true, false, false],
    );
    assert.deepEqual(
      messages.map((m: any) => m.bodyText),
      ['', '', 'message number 3 body.', 'message number 4 body.'],
    );
    assert.deepEqual(
      messages.map((m: any) => m.bodyHtml),
      ['', '', '', ''],
    );
    assert.equal(messages[0].subject, 'Long thread', 'metadata of a left-out message stays');

    mail.gmail.resetCounters();
    const body = await mail.getJson(`/api/mail/threads/${thread.id}/messages/${messages[0].id}/body`);
    assert.equal(body.status, 200, JSON.stringify(body.body));
    assert.deepEqual(body.body, {
      id: messages[0].id,
      threadId: thread.id,
      bodyText: 'oldest body, twenty+',
      bodyHtml: '',
      attachments: [],
    });
    assert.equal(mail.gmail.calls['threads.get'], 0, 'served from the store');

    const elsewhereOpened = await mail.getJson(`/api/mail/threads/${elsewhere.id}`);
    assert.deepEqual(
      elsewhereOpened.body.messages.map((m: any) => [m.bodyText, m.bodyOmitted]),
      [['other thread', false]],
      'the newest message is always whole',
    );
    const wrongThread = await mail.getJson(`/api/mail/threads/${elsewhere.id}/messages/${messages[0].id}/body`);
    assert.equal(wrongThread.status, 404);
    assert.equal(wrongThread.body.error.code, 'NOT_FOUND');
    const unknown = await mail.getJson(
      `/api/mail/threads/${thread.id}/messages/6f9619ff-8b86-4d01-b42d-00cf4fc964ff/body`,
    );
    assert.equal(unknown.status, 404);
    const malformed = await mail.getJson(`/api/mail/threads/${thread.id}/messages/not-a-uuid/body`);
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.code, 'VALIDATION_FAILED');
    const anonymous = await fetch(`${mail.app.url}/api/mail/threads/${thread.id}/messages/${messages[0].id}/body`);
    assert.equal(anonymous.status, 401);
  });

  it("an account's thread answers and message bodies are paced by the bytes of their bodies", async (t) => {
    let clock = 0;
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
      clock += ms;
    };
    // A byte a millisecond after a burst of 10 bytes: each answer below waits for the one before.
    const mail = await startMailApp(t, {
      overrides: { mailBodies: { gate: { bytesPerSecond: 1_000, burstBytes: 10, now: () => clock, sleep } } },
    });
    mail.gmail.addMessage(ALICE, { subject: 'Paced', bodyText: 'x'.repeat(1_000) });
    await mail.drain();
    const [thread] = await allThreads(mail);

    const first = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(first.status, 200);
    assert.deepEqual(waits, [], 'the first answer goes at once');
    const again = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(again.status, 200);
    assert.equal(waits.length, 1);
    assert.ok(
      waits[0]! >= 990 && waits[0]! <= 1_010,
      `the second waited for the first's ~1,000 body bytes: ${waits[0]} ms`,
    );
    const body = await mail.getJson(`/api/mail/threads/${thread.id}/messages/${first.body.messages[0].id}/body`);
    assert.equal(body.status, 200);
    assert.equal(body.body.bodyText.length, 1_000);
    assert.equal(waits.length, 2, 'a message body waits its turn too');
    await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.ok(waits[2]! >= 990 && waits[2]! <= 1_010, `and is charged its bytes: ${waits[2]} ms`);
    assert.equal((await mail.getJson('/api/mail/threads')).status, 200, 'the list is not paced');
    assert.equal(waits.length, 3);
  });

  it('a thread of ordinary size never reaches the default budget', async (t) => {
    const mail = await startMailApp(t);
    const first = mail.gmail.addMessage(ALICE, {
      subject: 'Ordinary',
      bodyText: 'Hi,\n'.repeat(500),
      bodyHtml: `<p>${'Hello there. '.repeat(1_000)}</p>`,
    });
    for (let i = 0; i < 29; i++)
      mail.gmail.addMessage(ALICE, {
        threadId: first.threadId,
        bodyText: `Reply ${i} `.repeat(300),
        bodyHtml: `<div>${'Quoted text. '.repeat(2_000)}</div>`,
      });
    await mail.drain();
    const [thread] = await allThreads(mail);
    const opened = await mail.getJson(`/api/mail/threads/${thread.id}`);
    assert.equal(opened.status, 200);
    assert.equal(opened.body.messages.length, 30);
    assert.ok(
      opened.body.messages.every((m: any) => !m.bodyOmitted && m.bodyHtml.length > 10_000),
      '30 messages of 30 KB each: all whole',
    );
  });

  it('one account fetches at most two threads at once, through tRPC batches and parallel REST alike: a few wait, the rest answer 503 with Retry-After', async (t) => {
    const mail = await startMailApp(t, {
      overrides: { mailBodies: { opens: { fetchesPerAccount: 2, fetchesWaiting: 4 } } },
    });
    for (let i = 0; i < 21; i++)
      mail.gmail.addMessage(ALICE, { subject: `Thread ${i}`, bodyText: `body ${i} `.repeat(2_000) });
    await mail.drain();
    const threads = (await allThreads(mail)) as { id: string }[];
    const stored = threads[20]!;
    assert.equal((await mail.getJson(`/api/mail/threads/${stored.id}`)).status, 200);
    // Long enough that all twenty reach the account's places before the first fetch ends, even on a loaded machine.
    const LATENCY = 1_500;
    mail.gmail.setLatency(LATENCY);
    mail.gmail.resetCounters();
    // Ten opens in one tRPC batch, ten in parallel over REST: twenty at once for one account.
    const batch = threads.slice(0, 10);
    const input = encodeURIComponent(
      JSON.stringify(Object.fromEntries(batch.map((th, i) => [i, { threadId: th.id }]))),
    );
    const batched = mail.browser
      .fetch(`/trpc/${batch.map(() => 'mail.thread').join(',')}?batch=1&input=${input}`)
      .then(async (res) => (await res.json()) as any[]);
    const rest = Promise.all(threads.slice(10, 20).map((th) => mail.getJson(`/api/mail/threads/${th.id}`)));
    while (!mail.gmail.requests.some((r) => r.endpoint === 'threads.get')) await new Promise((r) => setTimeout(r, 10));
    // The account's places are taken and its queue full: a stored thread takes no place.
    assert.equal((await mail.getJson(`/api/mail/threads/${stored.id}`)).status, 200);
    const outcomes = [
      ...(await batched).map((x) => (x.result ? 'ok' : x.error.data.appCode)),
      ...(await rest).map((a) => {
        if (a.status === 200) return 'ok';
        assert.ok(Number(a.res.headers.get('retry-after')) >= 1, 'a refusal says when to come back');
        return a.body.error.code;
      }),
    ];
    assert.deepEqual(
      outcomes.filter((o) => o !== 'ok' && o !== 'SERVICE_UNAVAILABLE'),
      [],
      outcomes.join(),
    );
    assert.equal(
      outcomes.filter((o) => o === 'ok').length,
      6,
      `two fetching and four waiting are served: ${outcomes.join()}`,
    );
    // Each fetch takes at least LATENCY at the provider: never three arrivals within one.
    const arrivals = mail.gmail.requests
      .filter((r) => r.endpoint === 'threads.get')
      .map((r) => r.at)
      .sort((x, y) => x - y);
    assert.equal(arrivals.length, 6, 'a refused open fetched nothing');
    for (let i = 2; i < arrivals.length; i++)
      assert.ok(arrivals[i]! - arrivals[i - 2]! >= LATENCY - 5, `three fetches in flight: ${arrivals.join(', ')}`);
  });

  it('a refused open is remembered for its Retry-After: reopened sooner, it is refused at once with the rest of the wait and fetches nothing', async (t) => {
    let clock = 1_000_000;
    const mail = await startMailApp(t, {
      overrides: { mailBodies: { opens: { fetchesPerAccount: 1, fetchesWaiting: 0, now: () => clock } } },
    });
    mail.gmail.addMessage(ALICE, { subject: 'One', bodyText: 'one' });
    mail.gmail.addMessage(ALICE, { subject: 'Two', bodyText: 'two' });
    await mail.drain();
    const [first, second] = (await allThreads(mail)) as { id: string }[];
    mail.gmail.setLatency(400);
    mail.gmail.resetCounters();
    const fetching = mail.getJson(`/api/mail/threads/${first!.id}`);
    while (!mail.gmail.requests.some((r) => r.endpoint === 'threads.get')) await new Promise((r) => setTimeout(r, 10));
    const refused = await mail.getJson(`/api/mail/threads/${second!.id}`);
    assert.equal(refused.status, 503);
    assert.equal(refused.res.headers.get('retry-after'), '2');
    clock += 1_200;
    const again = await mail.getJson(`/api/mail/threads/${second!.id}`);
    assert.equal(again.status, 503, 'reopened within its Retry-After: refused at once');
    assert.equal(again.res.headers.get('retry-after'), '1', 'with the rest of the wait');
    assert.equal((await fetching).status, 200);
    assert.equal(
      mail.gmail.requests.filter((r) => r.endpoint === 'threads.get').length,
      1,
      'the refused thread fetched nothing',
    );
    clock += 1_000;
    assert.equal((await mail.getJson(`/api/mail/threads/${second!.id}`)).status, 200, 'after its Retry-After it opens');
  });
});
