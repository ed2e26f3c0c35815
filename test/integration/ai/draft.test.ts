/**
 * POST /api/mail/threads/:threadId/draft: options honoured, falling back to the stored
 * response-style defaults; Draft.language rule; the signature appended after generation
 * and never sent to the model; strict body validation; every draft stored.
 */
import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Draft } from '../../../db/entities/index.ts';
import { draftResult } from '../../../shared/schemas/ai.ts';
import { seedThread, sharedAiSetup, type AiSetup } from '../../helpers/mail-fixtures.ts';

type Recorded = { body: { messages: { role: string; content: string }[]; max_completion_tokens: number } };
const userText = (r: Recorded) => r.body.messages.find((m) => m.role === 'user')!.content;
const systemText = (r: Recorded) => r.body.messages.find((m) => m.role === 'system')!.content;
/** The <options> JSON of a recorded draft request. */
const sentOptions = (r: Recorded) => JSON.parse(/<options>\n(.*)\n<\/options>/s.exec(userText(r))![1]);

describe('draft', () => {
  const setup = sharedAiSetup();
  let s: AiSetup;
  const patchSettings = (json: unknown) =>
    s.browser.fetch('/api/settings', { method: 'PATCH', headers: s.headers(), json });
  beforeEach(async () => {
    s = setup();
    s.openai.reset();
    s.freshClient();
    await patchSettings({
      signature: null,
      responseStyle: { tone: null, length: null, language: null, preferredTone: null },
    });
    s.openai.setResponder(() => ({
      subject: 'Re: Quarterly report',
      body: 'Hi Bob,\n\nI will send it on Friday.',
      language: 'English',
    }));
  });

  it('returns a draft with defaults (tone default, length medium) and stores it', async () => {
    const { threadId, messageIds, accountId } = await seedThread(s.app, { messages: [{}, {}] });
    const res = await s.draft(threadId);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.ok(draftResult.safeParse(body).success);
    assert.deepEqual(body, {
      draft: { subject: 'Re: Quarterly report', body: 'Hi Bob,\n\nI will send it on Friday.', language: 'English' },
      model: 'gpt-4o-mini',
    });
    const [req] = s.openai.requests as unknown as Recorded[];
    assert.deepEqual(sentOptions(req), {
      tone: 'natural and polite',
      length: 'about 80 to 180 words',
      language: 'the language of the latest message',
    });
    assert.equal(req.body.max_completion_tokens, 800);
    const rows = await s.app.container.orm.em.fork().find(Draft, { thread: threadId });
    assert.equal(rows.length, 1);
    assert.equal(rows[0].message, messageIds[1]);
    assert.equal(rows[0].account, accountId);
    assert.deepEqual(rows[0].options, { tone: 'default', length: 'medium' });
    assert.equal(rows[0].body, body.draft.body);
  });

  it('honours tone, length, language and preferredTone', async () => {
    const { threadId } = await seedThread(s.app);
    const res = await s.draft(threadId, {
      tone: 'professional',
      length: 'short',
      language: 'French',
      preferredTone: 'crisp but kind',
    });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.draft.language, 'French', "the request's language, whatever the model reports");
    const [req] = s.openai.requests as unknown as Recorded[];
    assert.deepEqual(sentOptions(req), {
      tone: 'professional and concise',
      length: 'at most 80 words',
      language: 'French',
      ownerPreferredTone: 'crisp but kind',
    });
    assert.equal(req.body.max_completion_tokens, 400);
    const long = await s.draft(threadId, { length: 'long', tone: 'friendly' });
    assert.equal(long.status, 200);
    const second = (s.openai.requests as unknown as Recorded[])[1];
    assert.equal(second.body.max_completion_tokens, 1400);
    assert.equal(sentOptions(second).tone, 'warm and friendly');
  });

  it('falls back to the stored response-style defaults for unset fields', async () => {
    assert.equal(
      (
        await patchSettings({
          responseStyle: { tone: 'friendly', length: 'long', language: 'German', preferredTone: 'warm' },
        })
      ).status,
      200,
    );
    const { threadId } = await seedThread(s.app);
    const first = await (await s.draft(threadId)).json();
    assert.equal(first.draft.language, 'German');
    const second = await (await s.draft(threadId, { tone: 'professional', language: 'Italian' })).json();
    assert.equal(second.draft.language, 'Italian');
    const [a, b] = s.openai.requests as unknown as Recorded[];
    assert.deepEqual(sentOptions(a), {
      tone: 'warm and friendly',
      length: 'about 180 to 350 words',
      language: 'German',
      ownerPreferredTone: 'warm',
    });
    assert.deepEqual(sentOptions(b), {
      tone: 'professional and concise',
      length: 'about 180 to 350 words',
      language: 'Italian',
      ownerPreferredTone: 'warm',
    });
    const rows = await s.app.container.orm.em
      .fork()
      .find(Draft, { thread: threadId }, { orderBy: { createdAt: 'asc' } });
    assert.deepEqual(
      rows.map((r) => r.options),
      [
        { tone: 'friendly', length: 'long', language: 'German', preferredTone: 'warm' },
        { tone: 'professional', length: 'long', language: 'Italian', preferredTone: 'warm' },
      ],
    );
  });

  it("takes the latest message's language, as the model reports it, when none is set", async () => {
    s.openai.setResponder(() => ({
      subject: 'Re: Informe',
      body: 'Hola Bob, te lo envío el viernes.',
      language: 'Spanish',
    }));
    const { threadId } = await seedThread(s.app, {
      messages: [{ bodyText: '¿Me puedes enviar el informe trimestral?' }],
    });
    const body = await (await s.draft(threadId)).json();
    assert.equal(body.draft.language, 'Spanish');
  });

  it('sends the model this thread only: another thread of the account never reaches it, for a draft or an analysis', async () => {
    await seedThread(s.app, {
      messages: [{ bodyText: 'OTHER-THREAD-MARKER-4417 confidential' }, { bodyText: 'OTHER-THREAD-LATEST-4417' }],
    });
    const { threadId } = await seedThread(s.app, {
      messages: [{ bodyText: 'THIS-THREAD-EARLIER' }, { bodyText: 'THIS-THREAD-LATEST' }],
    });
    assert.equal((await s.draft(threadId)).status, 200);
    s.openai.setResponder(null); // the stand-in's own answer, of the analysis schema
    assert.equal((await s.analyze(threadId)).status, 200);
    assert.equal(s.openai.requests.length, 2);
    for (const r of s.openai.requests) {
      const sent = JSON.stringify(r.body);
      assert.ok(sent.includes('THIS-THREAD-LATEST'), 'the latest message is sent');
      assert.ok(!sent.includes('4417'), 'nothing of the other thread');
    }
    assert.ok(
      JSON.stringify(s.openai.requests[0]!.body).includes('THIS-THREAD-EARLIER'),
      'the draft gets the earlier message as context',
    );
  });

  it('appends the signature after generation and never sends it to the model', async () => {
    const signature = 'Best regards,\nAlice Example\nSIGNATURE-MARKER-7731 | +1 555 0100';
    assert.equal((await patchSettings({ signature })).status, 200);
    const { threadId } = await seedThread(s.app, { messages: [{}, {}, {}, {}] });
    for (const opts of [undefined, { tone: 'friendly' }, { length: 'long', language: 'English' }]) {
      const body = await (await s.draft(threadId, opts)).json();
      assert.equal(body.draft.body, `Hi Bob,\n\nI will send it on Friday.\n\n${signature}`);
    }
    s.openai.setResponder(null);
    assert.equal((await s.analyze(threadId)).status, 200);
    assert.equal(s.openai.requests.length, 4);
    for (const r of s.openai.requests) {
      const text = JSON.stringify(r.body);
      assert.ok(
        !text.includes('SIGNATURE-MARKER-7731') && !text.includes('Alice Example'),
        'the signature is never sent',
      );
    }
    assert.match(systemText(s.openai.requests[0] as unknown as Recorded), /appended automatically/);
    const stored = await s.app.container.orm.em.fork().find(Draft, { thread: threadId });
    assert.ok(stored.every((d) => d.body.endsWith(signature)));
  });

  it('sends the latest message and at most two earlier ones, reduced', async () => {
    const { threadId } = await seedThread(s.app, {
      messages: [
        { bodyText: 'OLDEST-MESSAGE' },
        { bodyText: 'SECOND-MESSAGE' },
        { bodyText: 'THIRD-MESSAGE', fromAddress: 'alice@example.com', fromName: 'Alice' },
        { bodyText: `LATEST-MESSAGE ${'y'.repeat(30_000)}` },
      ],
    });
    assert.equal((await s.draft(threadId)).status, 200);
    const text = userText(s.openai.requests[0] as unknown as Recorded);
    assert.ok(!text.includes('OLDEST-MESSAGE'));
    for (const m of ['SECOND-MESSAGE', 'THIRD-MESSAGE', 'LATEST-MESSAGE', 'the mailbox owner', '[…truncated]'])
      assert.ok(text.includes(m), m);
    assert.ok(!text.includes('alice@example.com') && !text.includes('bob@partner.example'));
    assert.ok(text.length < 10_000, `bounded (${text.length})`);
  });

  it('refuses bodies that do not match the schema, without a provider call', async () => {
    const { threadId } = await seedThread(s.app);
    const cases: [unknown, string, string][] = [
      [{ tone: 'rude' }, 'tone', 'invalid_value'],
      [{ length: 'huge' }, 'length', 'invalid_value'],
      [{ tone: 5 }, 'tone', 'invalid_value'],
      [{ language: 'x'.repeat(61) }, 'language', 'too_big'],
      [{ preferredTone: 'p'.repeat(61) }, 'preferredTone', 'too_big'],
      [{ language: '   ' }, 'language', 'too_small'],
      [{ language: 42 }, 'language', 'invalid_type'],
      [{ signature: 'Alice' }, 'signature', 'unrecognized_keys'],
      [{ tone: 'friendly', extra: 1 }, 'extra', 'unrecognized_keys'],
    ];
    for (const [json, path, code] of cases) {
      const res = await s.draft(threadId, json);
      assert.equal(res.status, 400, JSON.stringify(json));
      const { error } = await res.json();
      assert.equal(error.code, 'VALIDATION_FAILED');
      assert.deepEqual(error.details.issues, [{ path, code }], JSON.stringify(json));
    }
    for (const json of [[], 5, null, true]) {
      const res = await s.draft(threadId, json);
      assert.equal(res.status, 400, `body ${JSON.stringify(json)}`);
      assert.equal((await res.json()).error.code, 'VALIDATION_FAILED');
    }
    assert.equal((await s.draft('nope', {})).status, 400);
    assert.equal(
      (await s.draft(threadId, { language: 'y'.repeat(60), preferredTone: 'z'.repeat(60) })).status,
      200,
      '60 characters are fine',
    );
    assert.equal(s.openai.calls.chat, 1);
  });

  it('answers NOT_FOUND for an unknown thread or one with no message', async () => {
    const empty = await seedThread(s.app, { messages: [] });
    for (const id of ['5b0c0f5e-0000-4000-8000-000000000001', empty.threadId]) {
      const res = await s.draft(id, { tone: 'friendly' });
      assert.equal(res.status, 404);
      assert.equal((await res.json()).error.code, 'NOT_FOUND');
    }
    assert.equal(s.openai.calls.total, 0);
  });

  it('is served at /trpc as mail.draft', async () => {
    const { threadId } = await seedThread(s.app);
    const res = await s.browser.fetch('/trpc/mail.draft', {
      method: 'POST',
      headers: s.headers(),
      json: { threadId, tone: 'friendly' },
    });
    assert.equal(res.status, 200);
    assert.ok(draftResult.safeParse((await res.json()).result.data).success);
    const bad = await s.browser.fetch('/trpc/mail.draft', {
      method: 'POST',
      headers: s.headers(),
      json: { threadId, tone: 'rude' },
    });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.data.appCode, 'VALIDATION_FAILED');
  });
});
