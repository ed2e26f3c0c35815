import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { startOpenAIStandIn, type OpenAIStandIn } from '../../stand-ins/openai.stand-in.ts';
import { corruptSample, sampleFromSchema, strictSchemaProblems } from '../../stand-ins/json-schema-sample.ts';

const TriageSchema = z
  .object({
    priority: z.enum(['URGENT', 'IMPORTANT', 'NORMAL', 'LOW']),
    replyStatus: z.enum(['NEEDS_REPLY', 'WAITING_ON_OTHERS', 'NO_REPLY_NEEDED']),
    confidence: z.number().min(0).max(1),
    reason: z.string(),
    suggestedAction: z.string(),
  })
  .strict();

const DraftSchema = z
  .object({
    subject: z.string(),
    body: z.string(),
    language: z.string(),
  })
  .strict();

const triageJsonSchema = z.toJSONSchema(TriageSchema) as Record<string, unknown>;
const draftJsonSchema = z.toJSONSchema(DraftSchema) as Record<string, unknown>;

const MODEL = 'gpt-4o-mini';

function triageRequest(userText = 'Subject: Quarterly report\n\nCan you send me the numbers by Friday?') {
  return {
    model: MODEL,
    messages: [
      { role: 'system' as const, content: 'You triage emails.' },
      { role: 'user' as const, content: userText },
    ],
    response_format: {
      type: 'json_schema' as const,
      json_schema: { name: 'email_triage', strict: true, schema: triageJsonSchema },
    },
  };
}

function draftRequest() {
  return {
    model: MODEL,
    messages: [{ role: 'user' as const, content: 'Draft a reply to: "Can we meet on Tuesday?"' }],
    response_format: {
      type: 'json_schema' as const,
      json_schema: { name: 'reply_draft', strict: true, schema: draftJsonSchema },
    },
  };
}

/** Rejects with `err` if `p` does not settle in `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitUntil(cond: () => boolean, what: string, ms = 2_000): Promise<void> {
  await within(
    (async () => {
      while (!cond()) await new Promise((r) => setTimeout(r, 5));
    })(),
    ms,
    what,
  );
}

describe('OpenAI stand-in', () => {
  let standIn: OpenAIStandIn;
  let client: OpenAI;

  before(async () => {
    standIn = await startOpenAIStandIn();
    client = new OpenAI({ apiKey: standIn.apiKey, baseURL: standIn.baseUrl, maxRetries: 0, timeout: 5_000 });
  });

  after(async () => {
    await standIn.close();
  });

  beforeEach(() => {
    standIn.reset();
  });

  describe('chat completions', () => {
    it('answers with content valid against the triage schema, plus usage', async () => {
      const completion = await client.chat.completions.create(triageRequest());
      assert.equal(completion.object, 'chat.completion');
      assert.equal(completion.model, MODEL);
      assert.equal(completion.choices.length, 1);
      const choice = completion.choices[0];
      assert.equal(choice.finish_reason, 'stop');
      assert.equal(choice.message.role, 'assistant');
      assert.equal(choice.message.refusal, null);
      assert.equal(typeof choice.message.content, 'string');
      const parsed = TriageSchema.parse(JSON.parse(choice.message.content!));
      assert.ok(parsed.reason.length > 0);
      assert.ok(completion.usage, 'usage reported');
      assert.ok(completion.usage.prompt_tokens > 0);
      assert.ok(completion.usage.completion_tokens > 0);
      assert.equal(completion.usage.total_tokens, completion.usage.prompt_tokens + completion.usage.completion_tokens);
      assert.match(completion._request_id ?? '', /^req_/);
    });

    it('answers with content valid against the reply-draft schema', async () => {
      const completion = await client.chat.completions.create(draftRequest());
      const draft = DraftSchema.parse(JSON.parse(completion.choices[0].message.content!));
      assert.ok(draft.subject.length > 0 && draft.body.length > 0 && draft.language.length > 0);
    });

    it('is deterministic for the same request', async () => {
      const a = await client.chat.completions.create(triageRequest('same text'));
      const b = await client.chat.completions.create(triageRequest('same text'));
      assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    });

    it('varies the generated values across requests (enums are not constant)', async () => {
      const priorities = new Set<string>();
      for (let i = 0; i < 12; i++) {
        const c = await client.chat.completions.create(triageRequest(`email number ${i}`));
        priorities.add(TriageSchema.parse(JSON.parse(c.choices[0].message.content!)).priority);
      }
      assert.ok(priorities.size > 1, `only saw ${[...priorities].join(',')}`);
    });

    it('records every request body and counts calls per endpoint', async () => {
      await client.chat.completions.create(triageRequest('Subject: Secret project Zebra'));
      await client.models.list();
      assert.deepEqual(
        standIn.requests.map((r) => [r.method, r.path]),
        [
          ['POST', '/v1/chat/completions'],
          ['GET', '/v1/models'],
        ],
      );
      const body = standIn.requests[0].body;
      assert.equal(body.model, MODEL);
      assert.equal(body.response_format.json_schema.name, 'email_triage');
      assert.deepEqual(body.response_format.json_schema.schema, triageJsonSchema);
      assert.ok(JSON.stringify(standIn.requests).includes('Secret project Zebra'));
      assert.deepEqual(standIn.calls, { chat: 1, responses: 0, models: 1, other: 0, unauthorized: 0, total: 2 });

      standIn.resetCounters();
      assert.equal(standIn.requests.length, 0);
      assert.equal(standIn.calls.total, 0);
    });

    it('reports fixed usage when set, and an estimate that grows with the prompt otherwise', async () => {
      standIn.setUsage({ prompt_tokens: 123, completion_tokens: 45 });
      const fixed = await client.chat.completions.create(triageRequest());
      assert.deepEqual(
        [fixed.usage?.prompt_tokens, fixed.usage?.completion_tokens, fixed.usage?.total_tokens],
        [123, 45, 168],
      );

      standIn.setUsage(null);
      const short = await client.chat.completions.create(triageRequest('hi'));
      const long = await client.chat.completions.create(triageRequest('hi '.repeat(2000)));
      assert.ok(short.usage!.prompt_tokens > 0);
      assert.ok(long.usage!.prompt_tokens > short.usage!.prompt_tokens + 1000);
    });

    it('uses the responder when set (objects serialised, strings verbatim)', async () => {
      const seen: unknown[] = [];
      standIn.setResponder((body, ctx) => {
        seen.push([body.model, ctx.endpoint, ctx.schemaName]);
        return { priority: 'URGENT', replyStatus: 'NEEDS_REPLY', confidence: 0.9, reason: 'r', suggestedAction: 'a' };
      });
      const c = await client.chat.completions.create(triageRequest());
      assert.deepEqual(JSON.parse(c.choices[0].message.content!), {
        priority: 'URGENT',
        replyStatus: 'NEEDS_REPLY',
        confidence: 0.9,
        reason: 'r',
        suggestedAction: 'a',
      });
      assert.deepEqual(seen, [[MODEL, 'chat', 'email_triage']]);

      standIn.setResponder(() => 'plain words');
      const plain = await client.chat.completions.create(triageRequest());
      assert.equal(plain.choices[0].message.content, 'plain words');

      standIn.setResponder(null);
      const generated = await client.chat.completions.create(triageRequest());
      assert.notEqual(generated.choices[0].message.content, 'plain words');
      TriageSchema.parse(JSON.parse(generated.choices[0].message.content!));
    });

    it('applies latency', async () => {
      standIn.setLatency(200);
      const started = Date.now();
      await client.chat.completions.create(triageRequest());
      assert.ok(Date.now() - started >= 180, `took ${Date.now() - started} ms`);
    });

    it('rejects strict schemas OpenAI would reject (optional property not in required)', async () => {
      const loose = z.object({ subject: z.string(), cc: z.string().optional() }).strict();
      const req = {
        model: MODEL,
        messages: [{ role: 'user' as const, content: 'x' }],
        response_format: {
          type: 'json_schema' as const,
          json_schema: { name: 'loose', strict: true, schema: z.toJSONSchema(loose) as Record<string, unknown> },
        },
      };
      await assert.rejects(client.chat.completions.create(req), (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError);
        assert.equal(err.status, 400);
        assert.match(err.message, /'required' is required to be supplied.*Missing 'cc'/);
        assert.equal(err.param, 'response_format');
        return true;
      });
      // the same schema without strict is accepted and answered validly
      const ok = await client.chat.completions.create({
        ...req,
        response_format: { type: 'json_schema', json_schema: { ...req.response_format.json_schema, strict: false } },
      });
      loose.parse(JSON.parse(ok.choices[0].message.content!));
    });
  });

  describe('faults', () => {
    it('429 surfaces as RateLimitError with retry-after and x-request-id headers, once by default', async () => {
      standIn.injectFault({ status: 429, retryAfterSeconds: 7 });
      await assert.rejects(client.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 429);
        assert.equal(err.headers.get('retry-after'), '7');
        assert.match(err.requestID ?? '', /^req_/);
        assert.equal(err.code, 'rate_limit_exceeded');
        assert.deepEqual(Object.keys(err.error as object).sort(), ['code', 'message', 'param', 'type']);
        return true;
      });
      const next = await client.chat.completions.create(triageRequest());
      TriageSchema.parse(JSON.parse(next.choices[0].message.content!));
      assert.equal(standIn.calls.chat, 2);
    });

    it('429 without retryAfterSeconds has no retry-after header', async () => {
      standIn.injectFault({ status: 429 });
      await assert.rejects(client.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        assert.equal(err.headers.get('retry-after'), null);
        return true;
      });
    });

    it('honours times and queues faults in order', async () => {
      standIn.injectFault({ status: 500, times: 2 });
      standIn.injectFault({ status: 503 });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        try {
          await client.chat.completions.create(triageRequest());
          statuses.push(200);
        } catch (err) {
          assert.ok(err instanceof OpenAI.APIError);
          statuses.push(err.status as number);
        }
      }
      assert.deepEqual(statuses, [500, 500, 503, 200]);
    });

    it('500 surfaces as InternalServerError', async () => {
      standIn.injectFault({ status: 500 });
      await assert.rejects(client.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof OpenAI.InternalServerError);
        assert.equal(err.status, 500);
        assert.equal(err.type, 'server_error');
        return true;
      });
    });

    it('400 surfaces as BadRequestError', async () => {
      standIn.injectFault({ status: 400, message: 'bad things', code: 'invalid_value' });
      await assert.rejects(client.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError);
        assert.equal(err.status, 400);
        assert.equal(err.code, 'invalid_value');
        assert.match(err.message, /bad things/);
        return true;
      });
    });

    it('unparseable: 200 with content that is not JSON', async () => {
      standIn.injectFault({ kind: 'unparseable' });
      const c = await client.chat.completions.create(triageRequest());
      const content = c.choices[0].message.content!;
      assert.ok(content.length > 0);
      assert.throws(() => JSON.parse(content), SyntaxError);
    });

    it('schema-invalid: 200 with JSON that the zod schemas reject', async () => {
      standIn.injectFault({ kind: 'schema-invalid', times: 2 });
      const t = await client.chat.completions.create(triageRequest());
      const triage = JSON.parse(t.choices[0].message.content!);
      assert.equal(TriageSchema.safeParse(triage).success, false);
      assert.equal(triage.priority, 'BOGUS');
      assert.equal(triage.confidence, 7);

      const d = await client.chat.completions.create(draftRequest());
      const draft = JSON.parse(d.choices[0].message.content!);
      assert.equal(DraftSchema.safeParse(draft).success, false);
    });

    it('schema-invalid overrides a responder', async () => {
      standIn.setResponder(() => ({ subject: 's', body: 'b', language: 'en' }));
      standIn.injectFault({ kind: 'schema-invalid' });
      const d = await client.chat.completions.create(draftRequest());
      assert.equal(DraftSchema.safeParse(JSON.parse(d.choices[0].message.content!)).success, false);
    });

    it('hang: the client times out with APIConnectionTimeoutError', async () => {
      standIn.injectFault({ kind: 'hang' });
      const short = new OpenAI({ apiKey: standIn.apiKey, baseURL: standIn.baseUrl, maxRetries: 0, timeout: 300 });
      const started = Date.now();
      await assert.rejects(short.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIConnectionTimeoutError);
        assert.equal(err.status, undefined);
        return true;
      });
      assert.ok(Date.now() - started >= 250);
      // the aborted request is no longer in flight, and the fault was used up
      await waitUntil(() => standIn.inFlight() === 0, 'in-flight drain');
      await client.chat.completions.create(triageRequest());
    });

    it('garbage-body: 200 with a non-JSON HTTP body makes the client throw', async () => {
      standIn.injectFault({ kind: 'garbage-body' });
      await assert.rejects(client.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof SyntaxError, `got ${String(err)}`);
        return true;
      });
    });

    it('garbage-body with an error status surfaces as APIError carrying the raw text', async () => {
      standIn.injectFault({ kind: 'garbage-body', status: 502 });
      await assert.rejects(client.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof OpenAI.InternalServerError);
        assert.equal(err.status, 502);
        assert.match(err.message, /Bad Gateway/);
        return true;
      });
    });

    it('chat faults do not touch /models and models faults do not touch chat', async () => {
      standIn.injectFault({ status: 500 });
      standIn.injectFault({ endpoint: 'models', status: 503 });
      await assert.rejects(client.models.list(), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 503);
        return true;
      });
      const models = await client.models.list();
      assert.ok(models.data.length > 0);
      await assert.rejects(client.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 500);
        return true;
      });
    });

    it('refuses faults that make no sense', () => {
      assert.throws(() => standIn.injectFault({ endpoint: 'models', kind: 'schema-invalid' }), TypeError);
      assert.throws(() => standIn.injectFault({ status: 200 }), RangeError);
      assert.throws(() => standIn.injectFault({ status: 500, times: 0 }), RangeError);
    });
  });

  describe('hold / release', () => {
    it('holds completions until released', async () => {
      const release = standIn.hold();
      let settled = 0;
      const calls = [0, 1, 2].map((i) =>
        client.chat.completions.create(triageRequest(`held ${i}`)).then((c) => {
          settled += 1;
          return c;
        }),
      );
      try {
        await standIn.waitForPending(3);
        assert.equal(standIn.pending(), 3);
        assert.equal(standIn.calls.chat, 3);
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(settled, 0);
        assert.ok(standIn.peakInFlight() >= 3);
      } finally {
        release();
      }
      const results = await within(Promise.all(calls), 2_000, 'held calls');
      assert.equal(settled, 3);
      assert.equal(standIn.pending(), 0);
      for (const c of results) TriageSchema.parse(JSON.parse(c.choices[0].message.content!));
    });

    it('does not hold /models', async () => {
      const release = standIn.hold();
      try {
        const models = await within(client.models.list(), 1_000, 'models.list');
        assert.ok(models.data.length > 0);
        assert.equal(standIn.pending(), 0);
      } finally {
        release();
      }
    });

    it('a held request that the client abandons leaves pending()', async () => {
      const release = standIn.hold();
      try {
        const short = new OpenAI({ apiKey: standIn.apiKey, baseURL: standIn.baseUrl, maxRetries: 0, timeout: 200 });
        const p = short.chat.completions.create(triageRequest());
        await standIn.waitForPending(1);
        await assert.rejects(p, OpenAI.APIConnectionTimeoutError);
        await waitUntil(() => standIn.pending() === 0, 'pending drain');
      } finally {
        release();
      }
    });
  });

  describe('auth and routing', () => {
    it('answers 401 in OpenAI error shape for a wrong key', async () => {
      const wrong = new OpenAI({ apiKey: 'sk-wrong-key-123456', baseURL: standIn.baseUrl, maxRetries: 0 });
      await assert.rejects(wrong.chat.completions.create(triageRequest()), (err: unknown) => {
        assert.ok(err instanceof OpenAI.AuthenticationError);
        assert.equal(err.status, 401);
        assert.equal(err.code, 'invalid_api_key');
        assert.equal(err.type, 'invalid_request_error');
        assert.ok(!err.message.includes('sk-wrong-key-123456'), 'key is masked');
        return true;
      });
      await assert.rejects(wrong.models.list(), OpenAI.AuthenticationError);
      assert.equal(standIn.calls.unauthorized, 2);
    });

    it('answers 401 without an Authorization header, with {error:{message,type,param,code}}', async () => {
      const res = await fetch(`${standIn.baseUrl}/models`);
      assert.equal(res.status, 401);
      const body = (await res.json()) as { error: Record<string, unknown> };
      assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
      assert.equal(typeof body.error.message, 'string');
    });

    it('answers 404 for unknown paths and 400 for a non-JSON request body', async () => {
      const headers = { authorization: `Bearer ${standIn.apiKey}`, 'content-type': 'application/json' };
      const notFound = await fetch(`${standIn.baseUrl}/embeddings`, { method: 'POST', headers, body: '{}' });
      assert.equal(notFound.status, 404);
      assert.match(((await notFound.json()) as any).error.message, /Invalid URL/);
      const bad = await fetch(`${standIn.baseUrl}/chat/completions`, { method: 'POST', headers, body: '{not json' });
      assert.equal(bad.status, 400);
      assert.equal(((await bad.json()) as any).error.type, 'invalid_request_error');
      assert.equal(standIn.calls.other, 1);
      assert.equal(standIn.requests.at(-1)?.body, '{not json');
    });

    it('lists models and retrieves one', async () => {
      const page = await client.models.list();
      const ids = page.data.map((m) => m.id);
      assert.ok(ids.includes('gpt-4o-mini'));
      for (const m of page.data) {
        assert.equal(m.object, 'model');
        assert.equal(typeof m.created, 'number');
        assert.equal(typeof m.owned_by, 'string');
      }
      const one = await client.models.retrieve('gpt-4o-mini');
      assert.equal(one.id, 'gpt-4o-mini');
      await assert.rejects(client.models.retrieve('no-such-model'), OpenAI.NotFoundError);
      assert.equal(standIn.calls.models, 3);
    });
  });

  describe('responses API', () => {
    const responsesRequest = () => ({
      model: MODEL,
      instructions: 'You triage emails.',
      input: [{ role: 'user' as const, content: 'Subject: Invoice overdue' }],
      text: { format: { type: 'json_schema' as const, name: 'email_triage', strict: true, schema: triageJsonSchema } },
    });

    it('answers json_schema text.format with output_text and usage', async () => {
      const r = await client.responses.create(responsesRequest());
      assert.equal(r.object, 'response');
      assert.equal(r.status, 'completed');
      assert.equal(r.model, MODEL);
      TriageSchema.parse(JSON.parse(r.output_text));
      assert.ok(r.usage);
      assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
      assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
      assert.equal(standIn.calls.responses, 1);
      assert.equal(standIn.calls.chat, 0);
      assert.equal(standIn.requests[0].path, '/v1/responses');
      assert.equal(standIn.requests[0].body.text.format.name, 'email_triage');
    });

    it('takes default-endpoint faults and fixed usage', async () => {
      standIn.setUsage({ prompt_tokens: 10, completion_tokens: 5 });
      standIn.injectFault({ status: 429, retryAfterSeconds: 2 });
      await assert.rejects(client.responses.create(responsesRequest()), OpenAI.RateLimitError);
      standIn.injectFault({ kind: 'schema-invalid' });
      const bad = await client.responses.create(responsesRequest());
      assert.equal(TriageSchema.safeParse(JSON.parse(bad.output_text)).success, false);
      assert.deepEqual([bad.usage?.input_tokens, bad.usage?.output_tokens, bad.usage?.total_tokens], [10, 5, 15]);
    });

    it("'chat.completions' faults skip the responses endpoint", async () => {
      standIn.injectFault({ endpoint: 'chat.completions', status: 500 });
      const r = await client.responses.create(responsesRequest());
      TriageSchema.parse(JSON.parse(r.output_text));
      await assert.rejects(client.chat.completions.create(triageRequest()), OpenAI.InternalServerError);
    });
  });

  describe('openai/helpers/zod with zod 4', () => {
    it('zodResponseFormat + chat.completions.parse works', async () => {
      const c = await client.chat.completions.parse({
        model: MODEL,
        messages: [{ role: 'user', content: 'triage this' }],
        response_format: zodResponseFormat(TriageSchema, 'email_triage'),
      });
      const parsed = c.choices[0].message.parsed;
      assert.ok(parsed);
      assert.deepEqual(parsed, TriageSchema.parse(JSON.parse(c.choices[0].message.content!)));
      assert.equal(standIn.requests[0].body.response_format.json_schema.strict, true);
    });

    it('zodTextFormat + responses.parse works', async () => {
      const r = await client.responses.parse({
        model: MODEL,
        input: 'draft a reply',
        text: { format: zodTextFormat(DraftSchema, 'reply_draft') },
      });
      assert.ok(r.output_parsed);
      assert.deepEqual(r.output_parsed, DraftSchema.parse(JSON.parse(r.output_text)));
    });
  });
});

describe('OpenAI stand-in lifecycle', () => {
  it('uses the given apiKey and start latency', async () => {
    const s = await startOpenAIStandIn({ apiKey: 'custom-key', latencyMs: 150 });
    try {
      assert.equal(s.apiKey, 'custom-key');
      assert.match(s.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const c = new OpenAI({ apiKey: 'custom-key', baseURL: s.baseUrl, maxRetries: 0 });
      const started = Date.now();
      await c.models.list();
      assert.ok(Date.now() - started >= 130);
    } finally {
      await s.close();
    }
  });

  it('close() does not hang on held or hung requests', async () => {
    const s = await startOpenAIStandIn();
    try {
      const c = new OpenAI({ apiKey: s.apiKey, baseURL: s.baseUrl, maxRetries: 0, timeout: 30_000 });
      s.injectFault({ kind: 'hang' });
      const hungOutcome = c.chat.completions.create(triageRequest('hung')).then(
        () => 'resolved',
        (err: unknown) => err,
      );
      await waitUntil(() => s.inFlight() === 1, 'hung request arrives');
      s.hold();
      const heldOutcome = c.chat.completions.create(triageRequest('held')).then(
        () => 'resolved',
        (err: unknown) => err,
      );
      await s.waitForPending(1);
      assert.equal(s.inFlight(), 2);
      await within(s.close(), 2_000, 'close()');
      const [h1, h2] = await within(Promise.all([hungOutcome, heldOutcome]), 2_000, 'client calls');
      assert.ok(h1 instanceof OpenAI.APIConnectionError, `hung call: ${String(h1)}`);
      assert.ok(h2 instanceof OpenAI.APIConnectionError, `held call: ${String(h2)}`);
    } finally {
      await s.close();
    }
  });
});

describe('json-schema-sample', () => {
  const Tag = z
    .object({ label: z.string().min(3).max(5) })
    .strict()
    .meta({ id: 'Tag' });
  const Node: z.ZodType<{ name: string; children: unknown[] }> = z
    .object({
      name: z.string(),
      get children() {
        return z.array(Node).max(2);
      },
    })
    .strict();
  const Kitchen = z
    .object({
      du: z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('a'), a: z.number() }).strict(),
        z.object({ kind: z.literal('b'), b: z.boolean() }).strict(),
      ]),
      union: z.union([z.string().min(2), z.number()]),
      tags: z.array(Tag).min(2),
      uniq: z.array(z.enum(['x', 'y', 'z'])).min(3),
      t1: Tag,
      tree: Node,
      pos: z.number().positive().lt(5),
      neg: z.number().negative(),
      i: z.int().gt(3).lte(4),
      big: z.int().min(1000),
      m: z.number().multipleOf(0.25).min(1).max(2),
      e: z.email(),
      d: z.iso.datetime(),
      u: z.uuid(),
      url: z.url(),
      tuple: z.tuple([z.string(), z.number()]),
      nul: z.null(),
      lit: z.literal(5),
      n2: z.number().nullable(),
      maybe: z.string().optional(),
      shortText: z.string().min(40).max(45),
      tiny: z.string().max(2),
      flag: z.boolean(),
      nested: z.object({ deep: z.object({ deeper: z.array(z.object({ x: z.int().min(-3).max(-1) })).min(1) }) }),
    })
    .strict();
  const kitchenJson = z.toJSONSchema(Kitchen);

  it('generates values that zod accepts, for many seeds', () => {
    for (let seed = 0; seed < 200; seed++) {
      const value = sampleFromSchema(kitchenJson, { seed });
      const result = Kitchen.safeParse(value);
      assert.ok(result.success, `seed ${seed}: ${JSON.stringify(result.error?.issues)}\n${JSON.stringify(value)}`);
    }
  });

  it('handles uniqueItems', () => {
    const schema = { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] }, minItems: 3, uniqueItems: true };
    const v = sampleFromSchema(schema, { seed: 3 }) as string[];
    assert.equal(new Set(v).size, 3);
    const strings = sampleFromSchema({
      type: 'array',
      items: { type: 'string' },
      minItems: 3,
      uniqueItems: true,
    }) as string[];
    assert.equal(new Set(strings).size, 3);
  });

  it('handles draft-4 boolean exclusive bounds and allOf', () => {
    for (let seed = 0; seed < 50; seed++) {
      const n = sampleFromSchema(
        { type: 'integer', minimum: 1, exclusiveMinimum: true, maximum: 3, exclusiveMaximum: true },
        { seed },
      );
      assert.equal(n, 2);
    }
    const merged = sampleFromSchema({
      allOf: [
        { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
        { type: 'object', properties: { b: { type: 'integer', minimum: 10, maximum: 10 } }, required: ['b'] },
      ],
    }) as Record<string, unknown>;
    assert.equal(typeof merged.a, 'string');
    assert.equal(merged.b, 10);
  });

  it('derives plausible text from property names', () => {
    const v = sampleFromSchema(draftJsonSchema, { seed: 1 }) as Record<string, string>;
    assert.equal(v.language, 'en');
    assert.match(v.subject, /^Re: /);
    const other = sampleFromSchema({ type: 'object', properties: { meetingLocation: { type: 'string' } } }) as Record<
      string,
      string
    >;
    assert.equal(other.meetingLocation, 'Sample meeting location');
  });

  it('corruptSample breaks enum/bounds, else drops a required property', () => {
    const good = sampleFromSchema(triageJsonSchema, { seed: 9 });
    assert.equal(TriageSchema.safeParse(good).success, true);
    const bad = corruptSample(triageJsonSchema, good) as Record<string, unknown>;
    assert.equal(bad.priority, 'BOGUS');
    assert.equal(bad.replyStatus, 'BOGUS');
    assert.equal(bad.confidence, 7);
    const badDraft = corruptSample(draftJsonSchema, sampleFromSchema(draftJsonSchema)) as Record<string, unknown>;
    assert.equal('subject' in badDraft, false);
  });

  it('strictSchemaProblems flags what OpenAI strict mode rejects and passes the service schemas', () => {
    assert.deepEqual(strictSchemaProblems(triageJsonSchema), []);
    assert.deepEqual(strictSchemaProblems(draftJsonSchema), []);
    const open = strictSchemaProblems({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] });
    assert.equal(open.length, 1);
    assert.match(open[0], /'additionalProperties' is required to be supplied and to be false/);
    const nested = strictSchemaProblems({
      type: 'object',
      additionalProperties: false,
      required: ['o'],
      properties: { o: { type: 'object', additionalProperties: false, properties: { x: { type: 'string' } } } },
    });
    assert.equal(nested.length, 1);
    assert.match(nested[0], /In context=\('properties', 'o'\).*Missing 'x'/);
    assert.equal(strictSchemaProblems({ anyOf: [{ type: 'object' }] }).length, 1);
  });
});
