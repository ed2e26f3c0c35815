/**
 * The error envelope of spec part 7: `{error:{code,message,requestId,details?}}` for every
 * failure REST can produce today, the same errors through /trpc (`error.data.appCode`,
 * `error.data.requestId`, never a stack), and the closed set of codes, checked on every
 * error body this file saw and on toAppError over odd throwables.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TRPCError } from '@trpc/server';
import { TRPC_ERROR_CODES_BY_KEY, type TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import { ConnectionException } from '@mikro-orm/core';
import { z } from 'zod';
import { ERROR_CODES, ERROR_TABLE, type ErrorCode } from '../../../shared/errors.ts';
import { AppError } from '../../../server/domain/errors.ts';
import { toAppError } from '../../../server/errors/classify.ts';
import { renderEnvelope } from '../../../server/http/envelope.ts';
import { ADMIN_TOKEN, sharedApp } from '../../helpers/app.ts';

/** Every error code this file received, REST and tRPC alike, for the closed-set check. */
const seenCodes: { where: string; code: unknown }[] = [];

const ADMIN = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const JSON_TYPE = { 'Content-Type': 'application/json' };
const validIncident = () => ({
  kind: 'incident',
  state: 'investigating',
  title: 'Slow sync',
  message: 'We are looking into it.',
  affectedComponents: ['mail'],
});

/** No stack trace, source location or internal path anywhere in a response text. */
function assertNoInternals(text: string) {
  assert.ok(!/"stack"/i.test(text), `no stack key: ${text}`);
  assert.ok(!/\bat [^\s()]+ \(/.test(text) && !/\.(ts|js|mjs|cjs):\d+/.test(text), `no stack frames: ${text}`);
  assert.ok(!/node_modules|file:\/\//.test(text) && !text.includes(process.cwd()), `no internal paths: ${text}`);
}

function findKey(value: unknown, key: string): boolean {
  if (!value || typeof value !== 'object') return false;
  if (Object.hasOwn(value, key)) return true;
  return Object.values(value).some((v) => findKey(v, key));
}

function assertIssues(issues: unknown) {
  assert.ok(Array.isArray(issues), 'issues is an array');
  assert.ok(issues.length > 0, 'at least one issue');
  for (const issue of issues) {
    assert.deepEqual(Object.keys(issue).sort(), ['code', 'path'], `issue shape ${JSON.stringify(issue)}`);
    assert.equal(typeof issue.path, 'string');
    assert.equal(typeof issue.code, 'string');
    assert.ok(issue.code.length > 0);
  }
}

interface Envelope {
  error: {
    code: ErrorCode;
    message: string;
    requestId: string;
    details?: { issues: { path: string; code: string }[] };
  };
}

/** Asserts a REST response is the spec's envelope with `code`, and returns its body. */
async function expectEnvelope(res: Response, code: ErrorCode, where: string): Promise<Envelope> {
  const text = await res.text();
  assert.equal(res.status, ERROR_TABLE[code].status, `${where}: status (body ${text})`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, `${where}: JSON`);
  const body = JSON.parse(text);
  seenCodes.push({ where, code: body?.error?.code });
  assert.deepEqual(Object.keys(body), ['error'], `${where}: only "error" at the top`);
  const { error } = body;
  const allowed = ['code', 'message', 'requestId', 'details'];
  for (const k of Object.keys(error)) assert.ok(allowed.includes(k), `${where}: unexpected key ${k}`);
  assert.equal(error.code, code, `${where}: code`);
  assert.equal(error.message, ERROR_TABLE[code].message, `${where}: the fixed message`);
  assert.equal(typeof error.requestId, 'string');
  assert.ok(error.requestId.length > 0, `${where}: requestId present`);
  assert.equal(error.requestId, res.headers.get('x-request-id'), `${where}: requestId is the X-Request-Id header`);
  if (code === 'VALIDATION_FAILED') assertIssues(error.details?.issues);
  else assert.equal(error.details, undefined, `${where}: details only for VALIDATION_FAILED`);
  assertNoInternals(text);
  return body;
}

/** Asserts a /trpc response carries the spec's code and request id, and returns the error. */
async function expectTrpcError(res: Response, code: ErrorCode, where: string) {
  const text = await res.text();
  assert.equal(res.status, ERROR_TABLE[code].status, `${where}: status (body ${text})`);
  const body = JSON.parse(text);
  seenCodes.push({ where, code: body?.error?.data?.appCode });
  assert.equal(body.error.data.appCode, code, `${where}: appCode`);
  assert.equal(body.error.message, ERROR_TABLE[code].message, `${where}: fixed message`);
  assert.equal(body.error.data.requestId, res.headers.get('x-request-id'), `${where}: requestId`);
  assert.ok(body.error.data.requestId.length > 0);
  assert.ok(!findKey(body, 'stack'), `${where}: no stack key anywhere`);
  assertNoInternals(text);
  if (code === 'VALIDATION_FAILED') assertIssues(body.error.data.issues);
  return body.error;
}

describe('REST error envelope', () => {
  const app = sharedApp();
  const post = (body: string | undefined, headers: Record<string, string> = {}) =>
    fetch(`${app().url}/api/status/incidents`, {
      method: 'POST',
      headers: { ...ADMIN, ...JSON_TYPE, ...headers },
      body,
    });

  it('answers NOT_FOUND for an unknown route', async () => {
    for (const p of ['/nope', '/api/nope', '/api/status/incidents/extra/segments', '/auth/provider/unknown']) {
      await expectEnvelope(await fetch(`${app().url}${p}`), 'NOT_FOUND', `GET ${p}`);
    }
    await expectEnvelope(
      await fetch(`${app().url}/nope`, { method: 'POST', headers: JSON_TYPE, body: '{}' }),
      'NOT_FOUND',
      'POST /nope',
    );
  });

  it('answers NOT_FOUND for a wrong method on a known path', async () => {
    for (const [method, p] of [
      ['DELETE', '/health'],
      ['POST', '/health'],
      ['PUT', '/api/status/incidents'],
      ['DELETE', '/api/status/incidents'],
      ['PATCH', '/api/status/incidents'],
      ['GET', '/auth/logout'],
      ['DELETE', '/auth/session'],
      ['POST', '/openapi.json'],
    ]) {
      await expectEnvelope(await fetch(`${app().url}${p}`, { method }), 'NOT_FOUND', `${method} ${p}`);
    }
  });

  it('answers VALIDATION_FAILED for malformed JSON', async () => {
    for (const body of ['{"kind":', '{kind: "incident"}', "{'a':1}", '[1,2', 'undefined']) {
      const env = await expectEnvelope(await post(body), 'VALIDATION_FAILED', `malformed ${body}`);
      assert.ok(!JSON.stringify(env).includes(body), 'the submitted text is not echoed');
    }
  });

  it('answers VALIDATION_FAILED for a body that is not JSON-labelled', async () => {
    const text = JSON.stringify(validIncident());
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      await expectEnvelope(await post(text, { 'Content-Type': type }), 'VALIDATION_FAILED', `content type ${type}`);
    }
    // Control: the same body labelled JSON (with a charset) is accepted.
    const ok = await post(text, { 'Content-Type': 'application/json; charset=utf-8' });
    assert.equal(ok.status, 201);
  });

  it('answers VALIDATION_FAILED for a body over 64 KiB', async () => {
    const big = JSON.stringify({ ...validIncident(), message: 'x'.repeat(70 * 1024) });
    assert.ok(Buffer.byteLength(big) > 64 * 1024);
    await expectEnvelope(await post(big), 'VALIDATION_FAILED', 'oversized');
    // Control: just under the limit the body is parsed and Zod names the field.
    const under = JSON.stringify({ ...validIncident(), message: 'x'.repeat(60 * 1024) });
    const env = await expectEnvelope(await post(under), 'VALIDATION_FAILED', 'under the limit');
    assert.deepEqual(
      env.error.details?.issues.map((i) => i.path),
      ['message'],
    );
  });

  it('names the failing fields of a Zod error, never their values', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ ...validIncident(), title: 'ZQX-distinct-title-value-'.repeat(12) }, 'title', 'ZQX-distinct-title-value'],
      [{ ...validIncident(), kind: 'ZQX-distinct-kind' }, 'kind', 'ZQX-distinct-kind'],
      [
        { ...validIncident(), affectedComponents: ['mail', 'ZQX-distinct-component'] },
        'affectedComponents.1',
        'ZQX-distinct-component',
      ],
      [{ ...validIncident(), startsAt: 'ZQX-distinct-date' }, 'startsAt', 'ZQX-distinct-date'],
      [{ ...validIncident(), state: 'ZQX-distinct-state' }, 'state', 'ZQX-distinct-state'],
      [{ ...validIncident(), title: 42424242 }, 'title', '42424242'],
    ];
    for (const [body, field, secret] of cases) {
      const res = await post(JSON.stringify(body));
      const text = await res.clone().text();
      const env = await expectEnvelope(res, 'VALIDATION_FAILED', `zod ${field}`);
      assert.ok(
        env.error.details!.issues.some((i) => i.path === field),
        `names ${field}: ${JSON.stringify(env.error.details)}`,
      );
      assert.ok(!text.includes(secret), `value of ${field} appears nowhere in ${text}`);
    }
    const missing = await expectEnvelope(
      await post(JSON.stringify({ kind: 'incident', state: 'investigating' })),
      'VALIDATION_FAILED',
      'missing fields',
    );
    const paths = missing.error.details!.issues.map((i) => i.path);
    for (const f of ['title', 'message', 'affectedComponents'])
      assert.ok(paths.includes(f), `missing ${f} named: ${paths}`);
  });

  it('names every unknown body key with code unrecognized_keys', async () => {
    const res = await post(JSON.stringify({ ...validIncident(), sneakyKey: 'ZQX-sneaky-value', other: 1 }));
    const text = await res.clone().text();
    const env = await expectEnvelope(res, 'VALIDATION_FAILED', 'unknown keys');
    assert.ok(
      env.error.details!.issues.some((i) => i.path === 'sneakyKey' && i.code === 'unrecognized_keys'),
      text,
    );
    assert.ok(
      env.error.details!.issues.some((i) => i.path === 'other' && i.code === 'unrecognized_keys'),
      text,
    );
    assert.ok(!text.includes('ZQX-sneaky-value'));

    const created = await (await post(JSON.stringify(validIncident()))).json();
    const patch = await fetch(`${app().url}/api/status/incidents/${created.id}`, {
      method: 'PATCH',
      headers: { ...ADMIN, ...JSON_TYPE },
      body: JSON.stringify({ title: 'ok', resolvedAt: '2020-01-01T00:00:00.000Z' }),
    });
    const penv = await expectEnvelope(patch, 'VALIDATION_FAILED', 'PATCH unknown key');
    assert.deepEqual(penv.error.details!.issues, [{ path: 'resolvedAt', code: 'unrecognized_keys' }]);
  });

  it('answers FORBIDDEN for a missing or wrong status-admin credential', async () => {
    const body = JSON.stringify(validIncident());
    for (const auth of [
      undefined,
      'Bearer wrong-token',
      `Bearer ${ADMIN_TOKEN}x`,
      `Basic ${ADMIN_TOKEN}`,
      ADMIN_TOKEN,
      'Bearer ',
      `Bearer  ${ADMIN_TOKEN}`,
    ]) {
      const headers: Record<string, string> = { ...JSON_TYPE };
      if (auth !== undefined) headers.Authorization = auth;
      const res = await fetch(`${app().url}/api/status/incidents`, { method: 'POST', headers, body });
      await expectEnvelope(res, 'FORBIDDEN', `POST with ${JSON.stringify(auth)}`);
    }
    const patch = await fetch(`${app().url}/api/status/incidents/7b0f7a4e-1111-4222-8333-444455556666`, {
      method: 'PATCH',
      headers: JSON_TYPE,
      body: '{"state":"resolved"}',
    });
    await expectEnvelope(patch, 'FORBIDDEN', 'PATCH without credential');
    // Without the credential the body is not even looked at: an invalid one is still FORBIDDEN.
    const invalid = await fetch(`${app().url}/api/status/incidents`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({ bogus: 'ZQX' }),
    });
    await expectEnvelope(invalid, 'FORBIDDEN', 'POST invalid body without credential');
  });

  it('answers NOT_FOUND for an unknown incident and VALIDATION_FAILED for a malformed id', async () => {
    const unknown = await fetch(`${app().url}/api/status/incidents/7b0f7a4e-1111-4222-8333-444455556666`, {
      method: 'PATCH',
      headers: { ...ADMIN, ...JSON_TYPE },
      body: '{"state":"resolved"}',
    });
    await expectEnvelope(unknown, 'NOT_FOUND', 'PATCH unknown id');
    const malformed = await fetch(`${app().url}/api/status/incidents/not-a-uuid`, {
      method: 'PATCH',
      headers: { ...ADMIN, ...JSON_TYPE },
      body: '{"state":"resolved"}',
    });
    const env = await expectEnvelope(malformed, 'VALIDATION_FAILED', 'PATCH malformed id');
    assert.deepEqual(
      env.error.details!.issues.map((i) => i.path),
      ['id'],
    );
  });

  it('echoes a well-formed caller X-Request-Id and replaces a malformed one', async () => {
    const given = 'client-Req_0001.abc';
    const res = await fetch(`${app().url}/nope`, { headers: { 'X-Request-Id': given } });
    assert.equal(res.headers.get('x-request-id'), given);
    const env = await expectEnvelope(res, 'NOT_FOUND', 'echoed id');
    assert.equal(env.error.requestId, given);

    const ok = await fetch(`${app().url}/health`, { headers: { 'X-Request-Id': 'health-check-00000001' } });
    assert.equal(ok.headers.get('x-request-id'), 'health-check-00000001');

    for (const bad of ['short', 'has spaces in it', '<script>alert(1)</script>', 'x'.repeat(65), 'semi;colon;value']) {
      const r = await fetch(`${app().url}/nope`, { headers: { 'X-Request-Id': bad } });
      const header = r.headers.get('x-request-id');
      assert.notEqual(header, bad, `malformed id ${bad} not echoed`);
      assert.match(header ?? '', /^[0-9a-f-]{36}$/, 'a fresh UUID instead');
      const e = await expectEnvelope(r, 'NOT_FOUND', `malformed id ${bad}`);
      assert.equal(e.error.requestId, header);
    }
  });

  it('gives every request its own id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add((await fetch(`${app().url}/nope`)).headers.get('x-request-id')!);
    assert.equal(ids.size, 5);
  });
});

describe('tRPC errors', () => {
  const app = sharedApp();
  const call = (proc: string, body: unknown, headers: Record<string, string> = ADMIN) =>
    fetch(`${app().url}/trpc/${proc}`, {
      method: 'POST',
      headers: { ...JSON_TYPE, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('answers NOT_FOUND for an unknown procedure and for a query sent to a mutation', async () => {
    await expectTrpcError(await fetch(`${app().url}/trpc/nope.nothing`), 'NOT_FOUND', 'unknown procedure');
    await expectTrpcError(await call('nope.nothing', {}), 'NOT_FOUND', 'unknown mutation');
    await expectTrpcError(await fetch(`${app().url}/trpc/status.createIncident`), 'NOT_FOUND', 'GET on a mutation');
  });

  it('answers FORBIDDEN without the status-admin credential', async () => {
    await expectTrpcError(
      await call('status.createIncident', validIncident(), {}),
      'FORBIDDEN',
      'createIncident without token',
    );
    await expectTrpcError(
      await call('status.createIncident', validIncident(), { Authorization: 'Bearer nope' }),
      'FORBIDDEN',
      'createIncident wrong token',
    );
    await expectTrpcError(
      await call('status.updateIncident', { id: '7b0f7a4e-1111-4222-8333-444455556666', state: 'resolved' }, {}),
      'FORBIDDEN',
      'updateIncident without token',
    );
  });

  it('answers VALIDATION_FAILED with issues naming fields, never values', async () => {
    const res = await call('status.createIncident', {
      ...validIncident(),
      title: 'ZQX-trpc-title-'.repeat(20),
      sneakyKey: 'ZQX-trpc-sneaky',
    });
    const text = await res.clone().text();
    const error = await expectTrpcError(res, 'VALIDATION_FAILED', 'zod via trpc');
    assert.ok(
      error.data.issues.some((i: { path: string }) => i.path === 'title'),
      text,
    );
    assert.ok(
      error.data.issues.some(
        (i: { path: string; code: string }) => i.path === 'sneakyKey' && i.code === 'unrecognized_keys',
      ),
      text,
    );
    assert.ok(!text.includes('ZQX-trpc'), `no submitted value in ${text}`);

    const kind = await call('status.createIncident', { ...validIncident(), state: 'scheduled' });
    const kerr = await expectTrpcError(kind, 'VALIDATION_FAILED', 'state not of kind via trpc');
    assert.ok(kerr.data.issues.some((i: { path: string }) => i.path === 'state'));
  });

  it('answers VALIDATION_FAILED for malformed JSON and an oversized body', async () => {
    await expectTrpcError(await call('status.createIncident', '{"kind":'), 'VALIDATION_FAILED', 'malformed via trpc');
    const big = JSON.stringify({ ...validIncident(), message: 'x'.repeat(70 * 1024) });
    await expectTrpcError(await call('status.createIncident', big), 'VALIDATION_FAILED', 'oversized via trpc');
  });

  it('carries the request id also on errors raised before the procedure runs (non-JSON body, bad batch)', async () => {
    const text = JSON.stringify(validIncident());
    await expectTrpcError(
      await call('status.createIncident', text, { ...ADMIN, 'Content-Type': 'text/plain' }),
      'VALIDATION_FAILED',
      'text/plain via trpc',
    );
    const batch = await fetch(
      `${app().url}/trpc/status.incidents,status.createIncident?batch=1&input=${encodeURIComponent('{}')}`,
    );
    await expectTrpcError(batch, 'VALIDATION_FAILED', 'query batch naming a mutation');
  });

  it('answers NOT_FOUND for an unknown incident', async () => {
    await expectTrpcError(
      await call('status.updateIncident', { id: '7b0f7a4e-1111-4222-8333-444455556666', state: 'resolved' }),
      'NOT_FOUND',
      'updateIncident unknown id',
    );
  });

  it('carries the caller X-Request-Id in error.data.requestId', async () => {
    const res = await call('status.createIncident', validIncident(), { 'X-Request-Id': 'trpc-caller-id-0001' });
    const error = await expectTrpcError(res, 'FORBIDDEN', 'trpc echoed id');
    assert.equal(error.data.requestId, 'trpc-caller-id-0001');
  });

  it('answers successes unchanged (control)', async () => {
    const res = await call('status.createIncident', validIncident());
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.result.data.title, 'Slow sync');
  });
});

describe('the closed set of codes', () => {
  it('every error body of this file carried a code of the closed set', () => {
    assert.ok(seenCodes.length >= 40, `enough error bodies were collected (${seenCodes.length})`);
    for (const { where, code } of seenCodes) {
      assert.ok(ERROR_CODES.includes(code as ErrorCode), `${where}: ${String(code)} is in the closed set`);
    }
  });

  it('ERROR_TABLE is the spec table: 15 codes with their statuses', () => {
    assert.deepEqual(Object.fromEntries(ERROR_CODES.map((c) => [c, ERROR_TABLE[c].status])), {
      AUTH_REQUIRED: 401,
      FORBIDDEN: 403,
      CSRF_FAILED: 403,
      OAUTH_FAILED: 400,
      TOKEN_EXPIRED: 401,
      VALIDATION_FAILED: 400,
      NOT_FOUND: 404,
      RATE_LIMITED: 429,
      MAIL_RATE_LIMITED: 429,
      AI_RATE_LIMITED: 429,
      AI_BUDGET_EXCEEDED: 429,
      AI_REQUEST_FAILED: 502,
      SYNC_FAILED: 502,
      SERVICE_UNAVAILABLE: 503,
      INTERNAL_ERROR: 500,
    });
  });
});

describe('toAppError', () => {
  const pgDown = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const zodError = () => {
    const r = z.object({ a: z.string() }).strict().safeParse({ a: 1, b: 'ZQX-zod-value' });
    assert.equal(r.success, false);
    return r.error;
  };

  const odd: [string, unknown][] = [
    ['plain Error', new Error(`boom at ${process.cwd()}/server/x.ts:1:1`)],
    ['string', 'a thrown string'],
    ['number', 42],
    ['null', null],
    ['undefined', undefined],
    ['plain object', { message: 'hi' }],
    ['object with status 413', { status: 413 }],
    ['exposed http error 413', Object.assign(new Error('request entity too large'), { status: 413, expose: true })],
    ['exposed http error 404', Object.assign(new Error('not found'), { status: 404, expose: true })],
    ['unexposed http error 500', Object.assign(new Error('internal'), { status: 500, expose: false })],
    ['pg ECONNREFUSED shape', { code: 'ECONNREFUSED' }],
    [
      'pg admin shutdown',
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    ],
    ['pg unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['AggregateError', new AggregateError([pgDown(), pgDown()], 'all failed')],
    ['wrapped cause', new Error('query failed', { cause: pgDown() })],
    ['MikroORM ConnectionException', new ConnectionException(pgDown())],
    ['Connection terminated', new Error('Connection terminated unexpectedly')],
    ['ZodError', zodError()],
    ['AppError', new AppError('AI_BUDGET_EXCEEDED', { retryAfter: 30 })],
    ['TRPCError with AppError cause', new TRPCError({ code: 'FORBIDDEN', cause: new AppError('CSRF_FAILED') })],
    ['TRPCError with Zod cause', new TRPCError({ code: 'BAD_REQUEST', cause: zodError() })],
    ['TRPCError with pg cause', new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: { code: 'ECONNREFUSED' } })],
    ...(Object.keys(TRPC_ERROR_CODES_BY_KEY) as TRPC_ERROR_CODE_KEY[]).map((code): [string, unknown] => [
      `TRPCError ${code}`,
      new TRPCError({ code, message: `internal ${code} text` }),
    ]),
  ];

  it('always returns a code of the closed set, with its status and fixed message', () => {
    for (const [name, thrown] of odd) {
      const app = toAppError(thrown);
      assert.ok(app instanceof AppError, name);
      assert.ok(ERROR_CODES.includes(app.code), `${name}: ${app.code}`);
      assert.equal(app.status, ERROR_TABLE[app.code].status, name);
      const rendered = renderEnvelope(app, 'rid-00000001');
      assert.equal(rendered.status, ERROR_TABLE[app.code].status, name);
      assert.equal(rendered.body.error.message, ERROR_TABLE[app.code].message, name);
      assert.equal(rendered.body.error.requestId, 'rid-00000001');
      assertNoInternals(JSON.stringify(rendered.body));
      assert.ok(!JSON.stringify(rendered.body).includes('ZQX-zod-value'), `${name}: no value`);
      if (rendered.status === 429 || rendered.status === 503)
        assert.match(rendered.headers['Retry-After'] ?? '', /^[1-9]\d*$/, `${name}: Retry-After`);
      else assert.equal(rendered.headers['Retry-After'], undefined, name);
    }
  });

  it('maps database unavailability to SERVICE_UNAVAILABLE', () => {
    for (const name of [
      'pg ECONNREFUSED shape',
      'pg admin shutdown',
      'AggregateError',
      'wrapped cause',
      'MikroORM ConnectionException',
      'Connection terminated',
      'TRPCError with pg cause',
    ]) {
      const thrown = odd.find(([n]) => n === name)![1];
      assert.equal(toAppError(thrown).code, 'SERVICE_UNAVAILABLE', name);
    }
  });

  it('maps the rest as the envelope expects', () => {
    const codeOf = (name: string) => toAppError(odd.find(([n]) => n === name)![1]).code;
    assert.equal(codeOf('plain Error'), 'INTERNAL_ERROR');
    assert.equal(codeOf('string'), 'INTERNAL_ERROR');
    assert.equal(codeOf('pg unique violation'), 'INTERNAL_ERROR');
    assert.equal(codeOf('exposed http error 413'), 'VALIDATION_FAILED');
    assert.equal(codeOf('exposed http error 404'), 'NOT_FOUND');
    assert.equal(codeOf('unexposed http error 500'), 'INTERNAL_ERROR');
    assert.equal(codeOf('AppError'), 'AI_BUDGET_EXCEEDED');
    assert.equal(codeOf('TRPCError with AppError cause'), 'CSRF_FAILED');
    assert.equal(codeOf('TRPCError NOT_FOUND'), 'NOT_FOUND');
    assert.equal(codeOf('TRPCError METHOD_NOT_SUPPORTED'), 'NOT_FOUND');
    assert.equal(codeOf('TRPCError TOO_MANY_REQUESTS'), 'RATE_LIMITED');
    for (const c of ['PARSE_ERROR', 'BAD_REQUEST', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'])
      assert.equal(codeOf(`TRPCError ${c}`), 'VALIDATION_FAILED', c);
    assert.equal(codeOf('TRPCError INTERNAL_SERVER_ERROR'), 'INTERNAL_ERROR');

    const zod = toAppError(odd.find(([n]) => n === 'TRPCError with Zod cause')![1]);
    assert.equal(zod.code, 'VALIDATION_FAILED');
    assert.deepEqual(zod.issues, [
      { path: 'a', code: 'invalid_type' },
      { path: 'b', code: 'unrecognized_keys' },
    ]);
  });

  it('keeps the Retry-After an AppError carries', () => {
    const rendered = renderEnvelope(new AppError('RATE_LIMITED', { retryAfter: 17.2 }), 'rid-00000002');
    assert.equal(rendered.headers['Retry-After'], '18');
    assert.equal(renderEnvelope(new AppError('SERVICE_UNAVAILABLE'), 'x').headers['Retry-After'], '5');
  });
});
