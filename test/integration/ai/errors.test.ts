/**
 * Provider failures as the spec's codes, with no upstream text reaching the client:
 * 429 -> AI_RATE_LIMITED with Retry-After; other statuses, timeouts, refused
 * connections, unparseable, schema-invalid and non-JSON answers -> AI_REQUEST_FAILED;
 * no key -> SERVICE_UNAVAILABLE. Also AUTH_REQUIRED and CSRF_FAILED on both AI routes.
 */
import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Analysis } from '../../../db/entities/index.ts';
import { freePort } from '../../../server/infra/database.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { aiSetup, seedThread, sharedAiSetup, type AiSetup } from '../../helpers/mail-fixtures.ts';

const UPSTREAM_WORDS = /stand-in|Rate limit reached|server had an error|Bad Gateway|upstream glitch|api key|Sorry/i;

async function expectCode(res: Response, status: number, code: string) {
  const text = await res.text();
  assert.equal(res.status, status, text);
  const body = JSON.parse(text);
  assert.equal(body.error.code, code);
  assert.ok(!UPSTREAM_WORDS.test(text), `no upstream text: ${text}`);
  return res;
}

describe('AI provider errors', () => {
  const setup = sharedAiSetup({}, { timeoutMs: 400 });
  let s: AiSetup;
  beforeEach(() => {
    s = setup();
    s.openai.reset();
    s.freshClient();
  });

  it("maps a provider 429 to AI_RATE_LIMITED with the provider's Retry-After", async () => {
    const { threadId } = await seedThread(s.app);
    s.openai.injectFault({ status: 429, retryAfterSeconds: 17 });
    const res = await expectCode(await s.analyze(threadId), 429, 'AI_RATE_LIMITED');
    assert.equal(res.headers.get('retry-after'), '17');
    s.openai.injectFault({ status: 429, retryAfterSeconds: 42 });
    const draft = await expectCode(await s.draft(threadId), 429, 'AI_RATE_LIMITED');
    assert.equal(draft.headers.get('retry-after'), '42');
    assert.equal(s.openai.calls.chat, 2, 'no retry of a 429');
    const trpc = await s.browser.fetch('/trpc/mail.analyze', {
      method: 'POST',
      headers: s.headers(),
      json: { threadId },
    });
    assert.equal(trpc.status, 200, 'the fault was used up');
  });

  it('sends a Retry-After for a provider 429 without one', async () => {
    const { threadId } = await seedThread(s.app);
    s.openai.injectFault({ status: 429 });
    const res = await expectCode(await s.analyze(threadId), 429, 'AI_RATE_LIMITED');
    assert.ok(Number(res.headers.get('retry-after')) >= 1);
  });

  it('carries AI_RATE_LIMITED and Retry-After through /trpc', async () => {
    const { threadId } = await seedThread(s.app);
    s.openai.injectFault({ status: 429, retryAfterSeconds: 9 });
    const res = await s.browser.fetch('/trpc/mail.draft', { method: 'POST', headers: s.headers(), json: { threadId } });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '9');
    const text = await res.text();
    assert.equal(JSON.parse(text).error.data.appCode, 'AI_RATE_LIMITED');
    assert.ok(!UPSTREAM_WORDS.test(text));
  });

  it('maps other statuses to AI_REQUEST_FAILED', async () => {
    const { threadId } = await seedThread(s.app);
    for (const status of [400, 401, 403, 404, 500, 503]) {
      s.openai.injectFault({ status });
      await expectCode(await s.analyze(threadId), 502, 'AI_REQUEST_FAILED');
    }
    assert.equal(s.openai.calls.chat, 6, 'no client retries');
  });

  it('maps answers that do not parse to AI_REQUEST_FAILED and stores nothing', async () => {
    const { threadId, messageIds } = await seedThread(s.app);
    for (const fault of [
      { kind: 'unparseable' },
      { kind: 'schema-invalid' },
      { kind: 'garbage-body' },
      { kind: 'garbage-body', status: 502 },
    ] as const) {
      s.openai.injectFault(fault);
      await expectCode(await s.analyze(threadId), 502, 'AI_REQUEST_FAILED');
      s.openai.injectFault(fault);
      await expectCode(await s.draft(threadId), 502, 'AI_REQUEST_FAILED');
    }
    s.openai.setResponder(() => ({
      priority: 'SOMEDAY',
      replyStatus: 'NEEDS_REPLY',
      confidence: 2,
      reason: 'r',
      suggestedAction: 'a',
    }));
    await expectCode(await s.analyze(threadId), 502, 'AI_REQUEST_FAILED');
    s.openai.setResponder(() => '');
    await expectCode(await s.analyze(threadId), 502, 'AI_REQUEST_FAILED');
    assert.equal(await s.app.container.orm.em.fork().count(Analysis, { message: messageIds[0] }), 0);
    s.openai.setResponder(null);
    assert.equal((await s.analyze(threadId)).status, 200, 'a later call succeeds');
  });

  it('stores and answers model strings holding U+0000 and lone surrogates, cleaned', async () => {
    const { threadId } = await seedThread(s.app);
    s.openai.setResponder((_body, ctx) =>
      ctx.schemaName === 'email_triage'
        ? {
            priority: 'NORMAL',
            replyStatus: 'NEEDS_REPLY',
            confidence: 0.5,
            reason: 'a\u0000b\ud800c',
            suggestedAction: 'x\udc00\u0000',
          }
        : { subject: 'S\u0000', body: 'b\ud83d', language: 'en\u0000' },
    );
    const analysis = await s.analyze(threadId);
    assert.equal(analysis.status, 200, await analysis.clone().text());
    const a = (await analysis.json()) as { reason: string; suggestedAction: string };
    assert.equal(a.reason, 'ab\ufffdc');
    assert.equal(a.suggestedAction, 'x\ufffd');
    const draft = await s.draft(threadId);
    assert.equal(draft.status, 200, await draft.clone().text());
    const d = (await draft.json()) as { draft: { subject: string; body: string; language: string } };
    assert.equal(d.draft.subject, 'S');
    assert.ok(d.draft.body.startsWith('b\ufffd'));
    assert.equal(d.draft.language, 'en');
    s.openai.setResponder(null);
  });

  it('maps a timeout to AI_REQUEST_FAILED', async () => {
    const { threadId } = await seedThread(s.app);
    s.openai.injectFault({ kind: 'hang' });
    const started = Date.now();
    await expectCode(await s.analyze(threadId), 502, 'AI_REQUEST_FAILED');
    // Bounded by the client's timeout (the SDK's own would be minutes); not timed closer: a loaded machine is slower, not wrong.
    assert.ok(Date.now() - started < 15_000, `bounded by the client timeout (${Date.now() - started} ms)`);
    assert.equal(s.openai.calls.chat, 1, 'a timeout is not retried');
  });

  it('retries a refused connection once, then answers AI_REQUEST_FAILED', async (t) => {
    // Its own app, whose AI provider is an address nothing listens on.
    const port = await freePort();
    const own = await aiSetup(t, { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` });
    const { threadId } = await seedThread(own.app);
    await expectCode(await own.draft(threadId), 502, 'AI_REQUEST_FAILED');
    const lines = own.app.logs.filter((l) => (l as { msg?: string }).msg === 'ai call failed');
    assert.equal((lines.at(-1) as { ai: { attempts: number } }).ai.attempts, 2);
  });

  it('logs model, tokens and latency per call, never content', async () => {
    const { threadId } = await seedThread(s.app, { messages: [{ bodyText: 'CONTENT-MARKER-5521 please reply' }] });
    s.openai.setUsage({ prompt_tokens: 111, completion_tokens: 22 });
    assert.equal((await s.analyze(threadId)).status, 200);
    const line = s.app.logs.filter((l) => (l as { msg?: string }).msg === 'ai call').at(-1) as {
      ai: Record<string, unknown>;
    };
    assert.equal(line.ai.model, 'gpt-4o-mini');
    assert.equal(line.ai.promptTokens, 111);
    assert.equal(line.ai.completionTokens, 22);
    assert.equal(typeof line.ai.latencyMs, 'number');
    assert.ok(!JSON.stringify(s.app.logs).includes('CONTENT-MARKER-5521'));
  });
});

describe('AI routes: session and CSRF', () => {
  const setup = sharedAiSetup();
  let s: AiSetup;
  beforeEach(() => {
    s = setup();
    s.openai.reset();
    s.freshClient();
  });

  it('answers AUTH_REQUIRED without a session and CSRF_FAILED without the token or Origin', async () => {
    const { threadId } = await seedThread(s.app);
    const ip = s.headers()['X-Forwarded-For'];
    for (const route of ['analyze', 'draft']) {
      const path = `/api/mail/threads/${threadId}/${route}`;
      const anon = await s.app
        .browser()
        .fetch(path, { method: 'POST', headers: { 'X-Forwarded-For': ip, 'X-CSRF-Token': s.csrfToken } });
      await expectCode(anon, 401, 'AUTH_REQUIRED');
      const variants: Record<string, string>[] = [
        { 'X-Forwarded-For': ip },
        { 'X-Forwarded-For': ip, 'X-CSRF-Token': 'not-the-token', Origin: WEB_ORIGIN },
        { 'X-Forwarded-For': ip, 'X-CSRF-Token': s.csrfToken, Origin: 'http://evil.test' },
      ];
      for (const headers of variants) {
        await expectCode(await s.browser.fetch(path, { method: 'POST', headers }), 403, 'CSRF_FAILED');
      }
      const trpc = await s.browser.fetch(`/trpc/mail.${route}`, {
        method: 'POST',
        headers: { 'X-Forwarded-For': ip },
        json: { threadId },
      });
      assert.equal((await trpc.json()).error.data.appCode, 'CSRF_FAILED');
    }
    assert.equal(s.openai.calls.total, 0);
  });

  it('limits each AI route to 20 per 60 seconds per client', async () => {
    const { threadId } = await seedThread(s.app);
    for (let i = 0; i < 20; i++) assert.equal((await s.analyze(threadId)).status, 200);
    await expectCode(await s.analyze(threadId), 429, 'RATE_LIMITED');
    assert.equal((await s.draft(threadId)).status, 200, 'draft has its own bucket');
  });
});

describe('AI not configured', () => {
  const setup = sharedAiSetup({ OPENAI_API_KEY: '' });
  it('answers SERVICE_UNAVAILABLE with Retry-After, after the thread check', async () => {
    const s = setup();
    const { threadId } = await seedThread(s.app);
    for (const res of [await s.analyze(threadId), await s.draft(threadId, { tone: 'friendly' })]) {
      await expectCode(res, 503, 'SERVICE_UNAVAILABLE');
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
    }
    await expectCode(await s.analyze('0d9f3c1e-1111-4111-8111-111111111111'), 404, 'NOT_FOUND');
    assert.equal(s.openai.calls.total, 0);
  });
});
