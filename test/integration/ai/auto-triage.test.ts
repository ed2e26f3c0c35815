/**
 * Analysis on arrival (settings `autoTriage`, runtime contract §5) in the live world: mail
 * notified through Pub/Sub, stored by the sync jobs, analysed by the auto-triage jobs against
 * the OpenAI stand-in, which answers from the subject so each analysis can be told apart.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { taggedJson } from '../../../demo/ai-responder.ts';
import { csrfHeaders } from '../../helpers/providers.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { ALICE, startLiveWorld, waitFor, type LiveWorld } from '../live/live-harness.ts';
import type { Browser } from '../../../harness/browser.ts';

/** The subject of a triage request's email (null for any other request). */
function subjectOf(body: { messages?: { role: string; content: string }[] }): string | null {
  const user = body.messages?.find((m) => m.role === 'user')?.content ?? '';
  const email = taggedJson(user, 'email') as { threadSubject?: string } | undefined;
  return email?.threadSubject ?? null;
}

/** Answers URGENT / NEEDS_REPLY for a subject with "urgent", else NORMAL / NO_REPLY_NEEDED. */
function answerBySubject(body: { messages?: { role: string; content: string }[] }) {
  const urgent = /urgent/i.test(subjectOf(body) ?? '');
  return {
    priority: urgent ? 'URGENT' : 'NORMAL',
    replyStatus: urgent ? 'NEEDS_REPLY' : 'NO_REPLY_NEEDED',
    confidence: 0.9,
    reason: 'r',
    suggestedAction: 'a',
  };
}

const triaged = (w: LiveWorld) =>
  w.providers.openai.requests.filter((r) => r.endpoint === 'chat').map((r) => subjectOf(r.body));
const triageIdle = (w: LiveWorld, timeoutMs = 20_000) =>
  waitFor(
    async () => (await w.app.container.liveInbox.engine.count('auto-triage')) === 0,
    'no auto-triage job waiting or running',
    timeoutMs,
    50,
  );

async function turnOn(w: LiveWorld, browser: Browser = w.browser, csrfToken = w.csrfToken): Promise<void> {
  const res = await browser.fetch('/api/settings', {
    method: 'PATCH',
    headers: csrfHeaders(csrfToken, WEB_ORIGIN),
    json: { autoTriage: true },
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).autoTriage, true);
}

async function listed(w: LiveWorld, query = '', browser: Browser = w.browser) {
  const res = await browser.fetch(`/api/mail/threads?limit=100${query}`);
  assert.equal(res.status, 200);
  return (await res.json()) as {
    total: number;
    threads: {
      id: string;
      subject: string;
      analysis: { priority: string; replyStatus: string; corrected: boolean } | null;
    }[];
  };
}

describe('analysis on arrival', () => {
  it('analyses each new inbox thread a person would, newest first, once per latest message, and announces it', async (t) => {
    const w = await startLiveWorld(t, { autoTriage: { perPass: 2, pollSeconds: 0.5 } });
    w.providers.openai.setResponder(answerBySubject);
    await w.idle();
    // Off by default: stored mail is not analysed.
    w.gmail.addMessage(ALICE, { subject: 'Before the setting' });
    await waitFor(async () => (await w.stored()).rows === 1, 'the first message stored');
    await w.idle();
    assert.deepEqual(triaged(w), []);
    await turnOn(w);
    await triageIdle(w);
    assert.deepEqual(triaged(w), ['Before the setting'], 'turning it on triages the recent inbox');

    const now = Date.now();
    const add = (subject: string, extra: Parameters<LiveWorld['gmail']['addMessage']>[1] = {}, ago = 0) =>
      w.gmail.addMessage(ALICE, { subject, internalDate: now - 60_000 + ago, ...extra });
    add('Plain one', {}, 1);
    add('Urgent: the server is down', {}, 2);
    add('Plain two', {}, 3);
    add('A sale', { labelIds: ['INBOX', 'UNREAD', 'CATEGORY_PROMOTIONS'] }, 4);
    add('A friend liked your post', { labelIds: ['INBOX', 'CATEGORY_SOCIAL'] }, 5);
    add('Build passed', { labelIds: ['INBOX', 'CATEGORY_UPDATES'] }, 6);
    add('A list digest', { headers: [{ name: 'List-Unsubscribe', value: '<mailto:u@lists.example>' }] }, 7);
    add('Out of office', { headers: [{ name: 'Precedence', value: 'bulk' }] }, 8);
    add('A note to self', { from: { name: 'Alice', address: ALICE } }, 9);
    await waitFor(async () => (await w.stored()).rows === 10, 'the new mail stored', 20_000);
    await w.idle();
    await triageIdle(w);
    // Newest first (the list's order), two a job: the three a person would triage, nothing else.
    assert.deepEqual(triaged(w).slice(1), ['Plain two', 'Urgent: the server is down', 'Plain one']);
    const list = await listed(w);
    const analysisOf = (subject: string) => list.threads.find((x) => x.subject === subject)?.analysis;
    assert.deepEqual(analysisOf('Urgent: the server is down'), {
      priority: 'URGENT',
      replyStatus: 'NEEDS_REPLY',
      confidence: 0.9,
      corrected: false,
    });
    for (const skipped of [
      'A sale',
      'A friend liked your post',
      'Build passed',
      'A list digest',
      'Out of office',
      'A note to self',
    ]) {
      assert.equal(analysisOf(skipped), null, `${skipped} is not analysed`);
    }
    // Each new analysis was announced as a threads event naming its thread.
    const announced = (
      await w.sql<{ ids: string[] }>(
        `select thread_ids::text[] as ids from mail_events where account_id = ? and kind = 'threads'`,
        [w.accountId],
      )
    ).flatMap((r) => r.ids);
    for (const x of list.threads.filter((x) => x.analysis))
      assert.ok(announced.includes(x.id), `${x.subject} announced`);
    // Charged as analysis on arrival.
    const [usage] = await w.sql<{ n: number }>(
      `select count(*)::int as n from ai_usage where account_id = ? and operation = 'auto-analyze' and state = 'settled'`,
      [w.accountId],
    );
    assert.equal(usage!.n, 4);

    // A label change stores the thread again: nothing is analysed twice. A new latest message is analysed anew.
    const urgent = w.gmail
      .inbox(ALICE)
      .find((m) => w.gmail.getMessage(ALICE, m.id)?.subject === 'Urgent: the server is down')!;
    w.gmail.setRead(ALICE, urgent.id, true);
    const reply = w.gmail.addMessage(ALICE, {
      threadId: w.gmail.getMessage(ALICE, urgent.id)!.threadId,
      subject: 'Re: Urgent: still down',
    });
    await waitFor(
      async () => (await w.sql('select 1 from mail_messages where provider_message_id = ?', [reply.id])).length === 1,
      'the reply stored',
    );
    await w.idle();
    await triageIdle(w);
    assert.equal(triaged(w).length, 5, 'one more analysis: the thread whose latest message is new');
    assert.equal(triaged(w)[4], 'Urgent: the server is down', "the thread keeps its first message's subject");
  });

  it('keeps within its share of the daily budget, to the token, and leaves the rest to on-demand calls; waits for the next UTC day', async (t) => {
    // 10,000 tokens a day, half for analysis on arrival; each call spends 1,200 and reserves its upper bound (~2,500).
    const w = await startLiveWorld(t, {
      env: { AI_DAILY_TOKEN_BUDGET: '10000', AUTO_TRIAGE_BUDGET_SHARE: '0.5' },
      autoTriage: { perPass: 10, pollSeconds: 0.5 },
    });
    w.providers.openai.setResponder(answerBySubject);
    w.providers.openai.setUsage({ prompt_tokens: 1_000, completion_tokens: 200 });
    await w.idle();
    for (let i = 0; i < 8; i++) w.gmail.addMessage(ALICE, { subject: `Thread ${i}` });
    await waitFor(async () => (await w.stored()).rows === 8, 'the mail stored', 20_000);
    await w.idle();
    await turnOn(w);
    await waitFor(
      async () =>
        (
          await w.sql(
            `select 1 from pgboss.job where name = 'auto-triage' and state = 'created' and data->>'reason' = 'budget'`,
          )
        ).length === 1,
      'the job to wait for the budget',
    );
    const [spent] = await w.sql<{ auto: number; n: number }>(
      `select coalesce(sum(tokens), 0)::int as auto, count(*)::int as n from ai_usage where account_id = ? and operation = 'auto-analyze'`,
      [w.accountId],
    );
    assert.ok(spent!.auto <= 5_000, `at most its share (${spent!.auto})`);
    assert.ok(spent!.n >= 2 && spent!.n < 8, `some threads analysed, not all (${spent!.n})`);
    const [wait] = await w.sql<{ hours: number }>(
      `select extract(epoch from start_after - now()) / 3600 as hours from pgboss.job where name = 'auto-triage' and state = 'created'`,
    );
    const untilMidnight =
      (Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1) - Date.now()) /
      3_600_000;
    assert.ok(
      Math.abs(Number(wait!.hours) - untilMidnight) < 0.05,
      `it waits until the next UTC day (${Number(wait!.hours).toFixed(2)} h)`,
    );
    // The user's own Analyze still answers: on-demand calls keep the other half.
    const open = (await listed(w)).threads.find((x) => !x.analysis)!;
    const res = await w.browser.fetch(`/api/mail/threads/${open.id}/analyze`, {
      method: 'POST',
      headers: csrfHeaders(w.csrfToken, WEB_ORIGIN),
    });
    assert.equal(res.status, 200);
    // New mail meanwhile does not bring the waiting job forward.
    w.gmail.addMessage(ALICE, { subject: 'While the share is spent' });
    await waitFor(async () => (await w.stored()).rows === 9, 'the new mail stored');
    await w.idle();
    const [after] = await w.sql<{ n: number }>(
      `select count(*)::int as n from ai_usage where account_id = ? and operation = 'auto-analyze'`,
      [w.accountId],
    );
    assert.equal(after!.n, spent!.n, 'no analysis on arrival past the share');
  });

  it('retries a failed analysis with backoff without holding back the next thread', async (t) => {
    const w = await startLiveWorld(t, { autoTriage: { perPass: 5, pollSeconds: 0.5, retryFirstMs: 200 } });
    w.providers.openai.setResponder(answerBySubject);
    await w.idle();
    for (const subject of ['First', 'Second', 'Third']) w.gmail.addMessage(ALICE, { subject });
    await waitFor(async () => (await w.stored()).rows === 3, 'the mail stored');
    await w.idle();
    w.providers.openai.injectFault({ status: 500, times: 1 });
    await turnOn(w);
    await triageIdle(w);
    // Newest first: Third failed, Second and First went on, Third was tried again.
    assert.deepEqual(triaged(w), ['Third', 'Second', 'First', 'Third']);
    assert.equal((await listed(w)).threads.filter((x) => x.analysis).length, 3);
    const [attempt] = await w.sql<{ attempts: number; code: string }>(
      'select attempts, code from triage_attempts where account_id = ?',
      [w.accountId],
    );
    assert.deepEqual(attempt, { attempts: 1, code: 'AI_REQUEST_FAILED' });
    assert.ok(
      w.app.logs.some(
        (l) =>
          l.msg === 'analysis on arrival failed; the message waits for its retry' && l.code === 'AI_REQUEST_FAILED',
      ),
    );
  });

  it('takes accounts in turns, a few threads a job, with the AI calls bounded by the workers', async (t) => {
    const w = await startLiveWorld(t, { autoTriage: { workers: 1, perPass: 2, pollSeconds: 0.5 } });
    w.providers.openai.setResponder(answerBySubject);
    const bob = await w.signInAs({ sub: 'user-bob', email: 'bob@example.com' });
    await w.idle();
    for (let i = 0; i < 6; i++) {
      w.gmail.addMessage(ALICE, { subject: `Alice ${i}` });
      // Not the stand-in's default sender, bob@example.com: Bob's own mail is not triaged.
      w.gmail.addMessage('bob@example.com', {
        subject: `Bob ${i}`,
        from: { name: 'Carol', address: 'carol@example.com' },
      });
    }
    await waitFor(
      async () => (await w.stored()).rows === 6 && (await w.stored(bob.accountId)).rows === 6,
      'both inboxes stored',
      20_000,
    );
    await w.idle();
    // Alice's job starts and waits on its first call while Bob's is queued behind it.
    const release = w.providers.openai.hold();
    await turnOn(w);
    await w.providers.openai.waitForPending(1);
    await turnOn(w, bob.browser, bob.csrfToken);
    release();
    await triageIdle(w);
    const order = triaged(w)
      .map((x) => x!.split(' ')[0])
      .join('');
    assert.equal(order, 'AliceAliceBobBobAliceAliceBobBobAliceAliceBobBob');
    assert.equal(w.providers.openai.peakInFlight(), 1, 'one call at a time with one worker');
  });
});
