/**
 * The response formats built from the Zod schemas (strict-mode valid, as the stand-in
 * checks them the way OpenAI does), answer parsing, the provider's error mapping and
 * Retry-After reading, the single flight, draft helpers and the UTC budget windows.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import * as openai from 'openai';
import { APIConnectionTimeoutError, APIError, RateLimitError } from 'openai';
import { analysisModelOutput, draftModelOutput } from '../../../../shared/schemas/ai.ts';
import { nextUtcDay, nextUtcMonth, utcDayStart, utcMonthStart } from '../../../../server/domain/ai/budget.service.ts';
import { appendSignature, effectiveStyle } from '../../../../server/domain/ai/draft.service.ts';
import { createSingleFlight } from '../../../../server/domain/ai/single-flight.ts';
import { parseAnswer, strictJsonSchema } from '../../../../server/domain/ai/structured.ts';
import { AppError } from '../../../../server/domain/errors.ts';
import { retryAfterFromHeaders, toAiError } from '../../../../server/providers/openai.ts';
import { strictSchemaProblems } from '../../../../stand-ins/json-schema-sample.ts';

describe('strictJsonSchema', () => {
  it('builds strict-mode schemas from the answer schemas', () => {
    for (const schema of [analysisModelOutput, draftModelOutput]) {
      const json = strictJsonSchema(schema);
      assert.deepEqual(strictSchemaProblems(json), []);
      assert.ok(!JSON.stringify(json).includes('maxLength') && !('$schema' in json));
    }
    const analysis = strictJsonSchema(analysisModelOutput) as { properties: Record<string, Record<string, unknown>> };
    assert.deepEqual(analysis.properties.priority.enum, ['URGENT', 'IMPORTANT', 'NORMAL', 'LOW']);
    assert.equal(analysis.properties.confidence.minimum, 0);
    assert.equal(analysis.properties.confidence.maximum, 1);
  });

  it('refuses schemas strict mode would reject', () => {
    assert.throws(() => strictJsonSchema(z.object({ a: z.string().optional() }).strict()), /not strict/);
    assert.throws(() => strictJsonSchema(z.object({ a: z.string() })), /not strict/);
    assert.throws(() => strictJsonSchema(z.object({ a: z.object({ b: z.string() }) }).strict()), /not strict/);
  });
});

describe('parseAnswer', () => {
  const good = { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED', confidence: 0.5, reason: 'r', suggestedAction: 'a' };
  it('accepts exactly the schema', () => {
    assert.deepEqual(parseAnswer(analysisModelOutput, JSON.stringify(good)), good);
  });
  it('refuses everything else as AI_REQUEST_FAILED', () => {
    for (const text of [
      null,
      '',
      'not json',
      '{"priority":"LOW"',
      JSON.stringify({ ...good, extra: 1 }),
      JSON.stringify({ ...good, confidence: 1.5 }),
      JSON.stringify([good]),
    ]) {
      assert.throws(
        () => parseAnswer(analysisModelOutput, text),
        (e: AppError) => e.code === 'AI_REQUEST_FAILED',
        String(text),
      );
    }
  });
  it("cleans its strings as strings from mail, and cuts them to the schema's bound", () => {
    const dirty = { ...good, reason: 'a\u0000b\ud800c', suggestedAction: `${'x'.repeat(999)}\ud83d\ude00tail` };
    const parsed = parseAnswer(analysisModelOutput, JSON.stringify(dirty));
    assert.equal(parsed.reason, 'ab\ufffdc');
    assert.equal(parsed.suggestedAction, 'x'.repeat(999), 'cut before the pair, never inside it');
    const draft = parseAnswer(
      draftModelOutput,
      JSON.stringify({ subject: 's'.repeat(400), body: '\udc00', language: 'en\u0000' }),
    );
    assert.deepEqual(draft, { subject: 's'.repeat(300), body: '\ufffd', language: 'en' });
  });
});

describe('provider errors', () => {
  it('maps 429 to AI_RATE_LIMITED and everything else to AI_REQUEST_FAILED', () => {
    const rate = toAiError(
      new RateLimitError(429, undefined, 'slow down', new Headers({ 'retry-after': '12' })),
      openai,
    );
    assert.equal(rate.code, 'AI_RATE_LIMITED');
    assert.equal(rate.retryAfter, 12);
    for (const err of [
      new APIError(500, undefined, 'boom', new Headers()),
      new APIConnectionTimeoutError(),
      new SyntaxError('Unexpected token <'),
      new TypeError('x'),
      'weird',
    ]) {
      assert.equal(toAiError(err, openai).code, 'AI_REQUEST_FAILED');
    }
  });

  it('reads Retry-After in its forms', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    const h = (o: Record<string, string>) => new Headers(o);
    assert.equal(retryAfterFromHeaders(h({ 'retry-after': '30' }), now), 30);
    assert.equal(retryAfterFromHeaders(h({ 'retry-after': '0.2' }), now), 1);
    assert.equal(retryAfterFromHeaders(h({ 'retry-after-ms': '2500', 'retry-after': '30' }), now), 3);
    assert.equal(retryAfterFromHeaders(h({ 'retry-after': 'Tue, 01 Jan 2030 00:01:00 GMT' }), now), 60);
    assert.equal(
      retryAfterFromHeaders(h({ 'x-ratelimit-reset-requests': '6m0s', 'x-ratelimit-reset-tokens': '20ms' }), now),
      360,
    );
    assert.equal(retryAfterFromHeaders(h({ 'x-ratelimit-reset-requests': 'soon' }), now), undefined);
    assert.equal(retryAfterFromHeaders(h({}), now), undefined);
  });
});

describe('single flight', () => {
  it('shares one run per key while it is in flight', async () => {
    const flights = createSingleFlight<number>();
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const task = async () => {
      runs += 1;
      await gate;
      return runs;
    };
    const all = [flights.run('a', task), flights.run('a', task), flights.run('b', task)];
    release();
    assert.deepEqual(await Promise.all(all), [2, 2, 2]);
    assert.equal(runs, 2);
    assert.equal(flights.size, 0);
    await assert.rejects(
      flights.run('c', async () => {
        throw new Error('x');
      }),
    );
    assert.equal(flights.size, 0, 'a failure leaves nothing behind');
  });
});

describe('draft helpers', () => {
  it('takes each option from the request, else the stored default, else tone default and length medium', () => {
    assert.deepEqual(effectiveStyle({}, null), {
      tone: 'default',
      length: 'medium',
      language: undefined,
      preferredTone: undefined,
    });
    assert.deepEqual(
      effectiveStyle({ tone: 'friendly' }, { tone: 'professional', length: 'short', language: 'German', bogus: 1 }),
      {
        tone: 'friendly',
        length: 'short',
        language: 'German',
        preferredTone: undefined,
      },
    );
    assert.deepEqual(effectiveStyle({}, { tone: 'loud', length: 7 }), {
      tone: 'default',
      length: 'medium',
      language: undefined,
      preferredTone: undefined,
    });
  });

  it('appends the signature after a blank line, and nothing for a blank one', () => {
    assert.equal(appendSignature('Hi.\n', 'Alice'), 'Hi.\n\nAlice');
    assert.equal(appendSignature('Hi.', '  '), 'Hi.');
    assert.equal(appendSignature('Hi.', null), 'Hi.');
  });
});

describe('UTC budget windows', () => {
  it('computes the day and month around boundaries', () => {
    const d = new Date('2030-12-31T23:59:59.999Z');
    assert.equal(utcDayStart(d).toISOString(), '2030-12-31T00:00:00.000Z');
    assert.equal(nextUtcDay(d).toISOString(), '2031-01-01T00:00:00.000Z');
    assert.equal(utcMonthStart(d).toISOString(), '2030-12-01T00:00:00.000Z');
    assert.equal(nextUtcMonth(d).toISOString(), '2031-01-01T00:00:00.000Z');
    assert.equal(nextUtcMonth(new Date('2032-02-29T12:00:00Z')).toISOString(), '2032-03-01T00:00:00.000Z');
  });
});
