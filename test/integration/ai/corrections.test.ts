/**
 * The list's analysis and its filters (GET /api/mail/threads), and corrections
 * (PUT /api/mail/threads/:threadId/analysis, tRPC mail.correctAnalysis): what the list shows,
 * every filter's matches and total, every bad value named, the correction's answer and errors,
 * and corrections as examples in later prompts of the same account only.
 */
import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { taggedJson } from '../../../demo/ai-responder.ts';
import { analysis as analysisSchema } from '../../../shared/schemas/ai.ts';
import { addMessage, otherAccount, seedThread, sharedAiSetup, type AiSetup } from '../../helpers/mail-fixtures.ts';

type Body = { messages?: { role: string; content: string }[] };
const userTurn = (body: Body) => body.messages?.find((m) => m.role === 'user')?.content ?? '';

/** The subject decides the answer: "urgent" URGENT / NEEDS_REPLY, "wait" LOW / WAITING_ON_OTHERS, else NORMAL / NO_REPLY_NEEDED. */
function bySubject(body: Body) {
  const subject = (taggedJson(userTurn(body), 'email') as { threadSubject?: string } | undefined)?.threadSubject ?? '';
  const [priority, replyStatus] = /urgent/i.test(subject)
    ? ['URGENT', 'NEEDS_REPLY']
    : /wait/i.test(subject)
      ? ['LOW', 'WAITING_ON_OTHERS']
      : ['NORMAL', 'NO_REPLY_NEEDED'];
  return { priority, replyStatus, confidence: 0.8, reason: 'r', suggestedAction: 'a' };
}

describe('the list shows and filters analyses; corrections', () => {
  const setup = sharedAiSetup();
  let s: AiSetup;
  beforeEach(() => {
    s = setup();
    s.openai.reset();
    s.openai.setResponder(bySubject);
    s.freshClient();
  });
  const list = async (query: string) => {
    const res = await s.browser.fetch(`/api/mail/threads?limit=100${query}`, { headers: s.headers() });
    return { status: res.status, body: await res.json() };
  };
  const correct = (threadId: string, json: unknown) =>
    s.browser.fetch(`/api/mail/threads/${threadId}/analysis`, { method: 'PUT', headers: s.headers(), json });

  it("carries each thread's analysis and filters by priority, reply status and unread, total counting the matches", async () => {
    await s.app.container.orm.em.fork().execute('delete from mail_threads');
    const urgent = await seedThread(s.app, { subject: 'Urgent: invoice', messages: [{ isUnread: true }] });
    const waiting = await seedThread(s.app, { subject: 'Waiting for the quote', messages: [{ isUnread: false }] });
    const normal = await seedThread(s.app, { subject: 'Lunch', messages: [{ isUnread: true }] });
    const none = await seedThread(s.app, { subject: 'Not analysed', messages: [{ isUnread: true }] });
    // The fixture makes every thread unread; as refreshThreads would, the read message makes its thread read.
    await s.app.container.orm.em
      .fork()
      .execute('update mail_threads set is_unread = false where id = ?', [waiting.threadId]);
    for (const t of [urgent, waiting, normal]) assert.equal((await s.analyze(t.threadId)).status, 200);
    const all = await list('');
    assert.equal(all.body.total, 4);
    const of = (id: string) => all.body.threads.find((x: { id: string }) => x.id === id).analysis;
    assert.deepEqual(of(urgent.threadId), {
      priority: 'URGENT',
      replyStatus: 'NEEDS_REPLY',
      confidence: 0.8,
      corrected: false,
    });
    assert.deepEqual(of(waiting.threadId), {
      priority: 'LOW',
      replyStatus: 'WAITING_ON_OTHERS',
      confidence: 0.8,
      corrected: false,
    });
    assert.equal(of(none.threadId), null);

    const ids = async (query: string) => {
      const r = await list(query);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.total, r.body.threads.length, `${query}: total counts the matches`);
      return r.body.threads.map((x: { id: string }) => x.id).sort();
    };
    const sorted = (...xs: { threadId: string }[]) => xs.map((x) => x.threadId).sort();
    assert.deepEqual(await ids('&priority=URGENT'), sorted(urgent));
    assert.deepEqual(await ids('&priority=URGENT,LOW'), sorted(urgent, waiting));
    assert.deepEqual(await ids('&replyStatus=NO_REPLY_NEEDED'), sorted(normal));
    assert.deepEqual(await ids('&unread=true'), sorted(urgent, normal, none));
    assert.deepEqual(await ids('&unread=false'), sorted(waiting));
    assert.deepEqual(await ids('&unread=true&priority=URGENT,NORMAL&replyStatus=NEEDS_REPLY'), sorted(urgent));
    assert.deepEqual(await ids('&priority=IMPORTANT'), []);
    // Paging keeps counting every match.
    const res = await s.browser.fetch('/api/mail/threads?unread=true&limit=1&offset=1', { headers: s.headers() });
    const page = { body: await res.json() };
    assert.deepEqual([page.body.total, page.body.threads.length, page.body.hasMore], [3, 1, true]);
    // The same filters on the typed client.
    const trpc = await s.browser.fetch(
      `/trpc/mail.threads?input=${encodeURIComponent(JSON.stringify({ priority: 'URGENT', unread: true }))}`,
      { headers: s.headers() },
    );
    assert.deepEqual(
      (await trpc.json()).result.data.threads.map((x: { id: string }) => x.id),
      [urgent.threadId],
    );
  });

  it('answers VALIDATION_FAILED naming the field for every bad filter value, never echoing it', async () => {
    for (const [query, path] of [
      ['priority=HIGH', 'priority.0'],
      ['priority=urgent', 'priority.0'],
      ['priority=', 'priority.0'],
      ['priority=URGENT,URGENT', 'priority'],
      ['priority=URGENT,,LOW', 'priority.1'],
      ['replyStatus=MAYBE', 'replyStatus.0'],
      ['unread=yes', 'unread'],
      ['unread=1', 'unread'],
      ['unread=', 'unread'],
      [`priority=${'URGENT,'.repeat(40)}`, 'priority'],
      ['colour=blue', 'colour'],
    ]) {
      const res = await list(`&${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error.code, 'VALIDATION_FAILED', query);
      assert.ok(
        res.body.error.details.issues.some((i: { path: string }) => i.path === path),
        `${query}: ${JSON.stringify(res.body.error.details.issues)}`,
      );
      assert.ok(
        !JSON.stringify(res.body).includes('HIGH') && !JSON.stringify(res.body).includes('MAYBE'),
        'the value is not echoed',
      );
    }
  });

  it("stores a correction in place of the model's values; the list and analyze show it", async () => {
    const t = await seedThread(s.app, { subject: 'Lunch on Friday' });
    assert.equal(
      (await correct(t.threadId, { priority: 'IMPORTANT' })).status,
      404,
      'NOT_FOUND while the latest message has no analysis',
    );
    const model = await (await s.analyze(t.threadId)).json();
    assert.equal(model.correctedAt, null);
    const res = await correct(t.threadId, { priority: 'IMPORTANT' });
    assert.equal(res.status, 200);
    const corrected = await res.json();
    assert.ok(analysisSchema.strict().safeParse(corrected).success, JSON.stringify(corrected));
    assert.deepEqual(
      [corrected.id, corrected.priority, corrected.replyStatus],
      [model.id, 'IMPORTANT', 'NO_REPLY_NEEDED'],
    );
    assert.ok(corrected.correctedAt && Date.parse(corrected.correctedAt) >= Date.parse(model.createdAt));
    const again = await (await correct(t.threadId, { replyStatus: 'NEEDS_REPLY' })).json();
    assert.deepEqual(
      [again.priority, again.replyStatus],
      ['IMPORTANT', 'NEEDS_REPLY'],
      'a later correction keeps the earlier one',
    );
    assert.deepEqual(await (await s.analyze(t.threadId)).json(), again, 'analyze serves the corrected analysis');
    assert.equal(s.openai.calls.chat, 1);
    const row = (await list('')).body.threads.find((x: { id: string }) => x.id === t.threadId);
    assert.deepEqual(row.analysis, {
      priority: 'IMPORTANT',
      replyStatus: 'NEEDS_REPLY',
      confidence: 0.8,
      corrected: true,
    });
    const [kept] = await s.app.container.orm.em
      .fork()
      .execute('select model_priority, model_reply_status from analyses where id = ?', [model.id]);
    assert.deepEqual(
      kept,
      { model_priority: 'NORMAL', model_reply_status: 'NO_REPLY_NEEDED' },
      "the model's values are kept",
    );
    // A new latest message has no analysis yet: nothing to correct.
    await addMessage(s.app, t.threadId, { sentAt: new Date(Date.now() + 60_000) });
    assert.equal((await correct(t.threadId, { priority: 'LOW' })).status, 404);
  });

  it('answers every error the route names', async () => {
    const t = await seedThread(s.app);
    await s.analyze(t.threadId);
    for (const [json, path] of [
      [{}, 'priority'],
      [{ priority: 'HIGH' }, 'priority'],
      [{ replyStatus: 'NEEDS_REPLY', mood: 'x' }, 'mood'],
      [{ priority: null }, 'priority'],
    ] as const) {
      const res = await correct(t.threadId, json);
      assert.equal(res.status, 400, JSON.stringify(json));
      const body = await res.json();
      assert.equal(body.error.code, 'VALIDATION_FAILED');
      assert.ok(
        body.error.details.issues.some((i: { path: string }) => i.path === path),
        JSON.stringify(body.error.details),
      );
    }
    assert.equal((await correct('not-a-uuid', { priority: 'LOW' })).status, 400);
    assert.equal((await correct('00000000-0000-4000-8000-000000000000', { priority: 'LOW' })).status, 404);
    const noCsrf = await s.browser.fetch(`/api/mail/threads/${t.threadId}/analysis`, {
      method: 'PUT',
      json: { priority: 'LOW' },
    });
    assert.equal((await noCsrf.json()).error.code, 'CSRF_FAILED');
    const signedOut = await fetch(`${s.app.url}/api/mail/threads/${t.threadId}/analysis`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"priority":"LOW"}',
    });
    assert.equal(signedOut.status, 401);
    const trpc = await s.browser.fetch('/trpc/mail.correctAnalysis', {
      method: 'POST',
      headers: s.headers(),
      json: { threadId: t.threadId, priority: 'LOW' },
    });
    assert.equal((await trpc.json()).result.data.priority, 'LOW');
  });

  it("shows the account's newest corrections of other threads to later analyses, and never another account's", async () => {
    await s.app.container.orm.em.fork().execute('delete from analyses');
    const corrected = await seedThread(s.app, {
      subject: 'Weekly digest from Acme',
      messages: [{ fromName: 'Acme News', snippet: 'This week at Acme' }],
    });
    await s.analyze(corrected.threadId);
    await correct(corrected.threadId, { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' });
    const later = await seedThread(s.app, { subject: 'Another digest' });
    await s.analyze(later.threadId);
    const prompt = userTurn(s.openai.requests.at(-1)!.body);
    const examples = taggedJson(prompt, 'corrections') as {
      from: string;
      subject: string;
      snippet: string;
      priority: string;
    }[];
    assert.deepEqual(examples, [
      {
        from: 'Acme News',
        subject: 'Weekly digest from Acme',
        snippet: 'This week at Acme',
        priority: 'LOW',
        replyStatus: 'NO_REPLY_NEEDED',
      },
    ]);
    // The thread itself is never its own example.
    await addMessage(s.app, corrected.threadId, { sentAt: new Date(Date.now() + 60_000) });
    await s.analyze(corrected.threadId);
    assert.equal(taggedJson(userTurn(s.openai.requests.at(-1)!.body), 'corrections'), undefined);
    // Another account: its prompt has none of this account's corrections.
    await otherAccount(s.app, 'mallory@example.com');
    const other = await seedThread(s.app, { email: 'mallory@example.com', subject: 'Weekly digest' });
    await s.app.container.services.ai.analysis.analyze(s.app.container.orm.em.fork(), other.accountId, other.threadId);
    const theirs = userTurn(s.openai.requests.at(-1)!.body);
    assert.ok(
      !theirs.includes('<corrections>') && !theirs.includes('Acme'),
      'nothing of another account reaches the prompt',
    );
  });
});
