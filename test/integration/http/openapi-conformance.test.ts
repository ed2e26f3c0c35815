/**
 * The OpenAPI conformance check itself can fail: fabricated answers off the
 * document are reported (undocumented status, body against the schema, missing required
 * header, undocumented content type), answers on undocumented operations are left alone, and
 * a real server's off-document answers are recorded with a readable report that keeps
 * tokens out (the report that would fail the file).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { ObservedAnswer } from '../../../server/http/observe.ts';
import type { RouteInstaller } from '../../../server/http/route-installer.ts';
import { buildTestApp } from '../../helpers/app.ts';
import { excerpt, servedDocumentChecker } from '../../helpers/openapi-recorder.ts';

const requestId = '3f1c9a2e-0000-4000-8000-000000000001';
const json = (
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Omit<ObservedAnswer, 'method' | 'path'> => ({
  status,
  headers: {
    'content-type': 'application/json; charset=utf-8',
    'x-request-id': requestId,
    'ratelimit-limit': '100',
    'ratelimit-remaining': '99',
    'ratelimit-reset': '60',
    ...headers,
  },
  body: JSON.stringify(body),
});
const envelope = (code: string) => ({ error: { code, message: 'm', requestId } });

describe('OpenAPI conformance checker', () => {
  it('passes documented answers and reports each kind of mismatch', async () => {
    const checker = await servedDocumentChecker('http://127.0.0.1');
    const check = (method: string, path: string, answer: Omit<ObservedAnswer, 'method' | 'path'>) =>
      checker.check({ method, path, ...answer });

    // Documented: a session, an envelope, a health report, path templates matched as routed.
    assert.deepEqual(check('GET', '/auth/session', json(200, { authenticated: false, csrfToken: 'x' }))?.problems, []);
    assert.deepEqual(
      check(
        'GET',
        '/API/mail/threads/not-a-uuid/',
        json(400, {
          error: {
            ...envelope('VALIDATION_FAILED').error,
            details: { issues: [{ path: 'threadId', code: 'invalid_format' }] },
          },
        }),
      )?.problems,
      [],
    );
    assert.equal(
      check('GET', '/api/mail/threads/not-a-uuid', json(400, envelope('VALIDATION_FAILED')))?.operation,
      'GET /api/mail/threads/{threadId}',
    );
    assert.equal(
      check('GET', '/api/mail/sync-state', json(401, envelope('AUTH_REQUIRED')))?.operation,
      'GET /api/mail/sync-state',
    );

    // An undocumented status.
    const teapot = check('GET', '/api/mail/threads', json(418, envelope('INTERNAL_ERROR')));
    assert.equal(teapot?.operation, 'GET /api/mail/threads');
    assert.match(teapot!.problems.join(), /status 418 is not documented \(documented: 200, 400, 401, 429, 500, 503\)/);

    // A body against the schema: a wrong type, a missing field, an unknown field.
    const bad = check('GET', '/auth/session', json(200, { authenticated: 'yes', extra: 1 }));
    assert.match(bad!.problems.join(), /^body: .*\/authenticated must be boolean/);
    assert.match(bad!.problems.join(), /must have required property 'csrfToken'/);
    assert.match(bad!.problems.join(), /must NOT have additional properties \(extra\)/);
    assert.match(
      check('GET', '/api/status/incidents', json(500, { message: 'Internal Server Error' }))!.problems.join(),
      /must have required property 'error'/,
    );

    // A required header missing (Retry-After on 429), and a documented header of the wrong form.
    const limited = check('POST', '/api/analytics/event', json(429, envelope('RATE_LIMITED')));
    assert.match(limited!.problems.join(), /required header Retry-After is missing/);
    const wrongHeader = check(
      'POST',
      '/api/analytics/event',
      json(429, envelope('RATE_LIMITED'), { 'retry-after': 'soon' }),
    );
    assert.match(wrongHeader!.problems.join(), /header Retry-After: \(root\) must be integer/);

    // A body of another media type than documented (Koa's own plain-text 500), and no body at all.
    assert.match(
      check('GET', '/health', {
        status: 500,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'x-request-id': requestId },
        body: 'Internal Server Error',
      })!.problems.join(),
      /content type text\/plain is not documented/,
    );
    assert.match(
      check('GET', '/api/settings', { ...json(200, {}), body: undefined })!.problems.join(),
      /no body was sent/,
    );

    // Not documented operations: left alone.
    assert.equal(check('GET', '/trpc/auth.session', json(200, {})), undefined);
    assert.equal(check('OPTIONS', '/api/mail/threads', { status: 204, headers: {}, body: undefined }), undefined);
    assert.equal(check('PUT', '/api/settings', json(404, envelope('NOT_FOUND'))), undefined);
    assert.equal(check('GET', '/docs/init.js', { status: 200, headers: {}, body: '' }), undefined);
  });

  it('keeps tokens out of body excerpts and cuts them short', () => {
    assert.equal(
      excerpt(JSON.stringify({ authenticated: true, csrfToken: 'secret-csrf', email: 'a@b.test' })),
      '{"authenticated":true,"csrfToken":"[redacted]","email":"a@b.test"}',
    );
    assert.equal(excerpt('x'.repeat(500)).length, 161);
    assert.equal(excerpt(undefined), '(no body)');
  });

  it("reports a real server's answers that are off the document, naming them", async (t) => {
    // An extra plain route shadows GET /auth/session (the router runs before the REST paths)
    // and answers off the document on purpose: an undocumented status, then a body off the schema.
    const offDocument: RouteInstaller = (routes) => {
      routes.get('/auth/session', (ctx) => {
        if (ctx.query.kind === 'status') {
          ctx.status = 418;
          ctx.body = { error: { code: 'INTERNAL_ERROR', message: 'm', requestId: 'r' } };
        } else ctx.body = { authenticated: 'yes', csrfToken: 'never-printed-token' };
      });
    };
    const app = await buildTestApp(t, { routes: [offDocument] });
    assert.equal((await fetch(`${app.url}/auth/session?kind=status`)).status, 418);
    assert.equal((await fetch(`${app.url}/auth/session`)).status, 200);
    assert.equal((await fetch(`${app.url}/auth/session`)).status, 200);
    assert.equal((await fetch(`${app.url}/health`)).status, 200);
    await app.stop();
    // Taken here, the report no longer fails this file at its end (as it otherwise would).
    const report = app.answers!.takeReport() ?? '';
    assert.match(report, /^3 answer\(s\) do not match \/openapi\.json:/);
    assert.match(
      report,
      /- GET \/auth\/session -> 418 \(1×, e\.g\. GET \/auth\/session\): status 418 is not documented/,
    );
    assert.match(
      report,
      /- GET \/auth\/session -> 200 \(2×, e\.g\. GET \/auth\/session\): body: \/authenticated must be boolean/,
    );
    assert.match(report, /"csrfToken":"\[redacted\]"/);
    assert.doesNotMatch(report, /never-printed-token/);
    assert.equal(app.answers!.takeReport(), undefined);
  });

  it('fails the test file after its tests and cleanups, naming the test and the answers', () => {
    // A nested run of a file whose recorder saw off-document answers (its tally goes to a run of its own).
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const fixture = path.join(import.meta.dirname, 'fixtures/off-document.fixture.ts');
    const run = spawnSync(process.execPath, ['--test', '--test-reporter=spec', fixture], {
      encoding: 'utf8',
      env: { ...env, MIA_TEST_RUN: 'off-document-fixture' },
    });
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.match(run.stdout, /✔ fabricated/);
    assert.match(
      run.stdout,
      /answers off the OpenAPI document\s+in "fabricated": 2 answer\(s\) do not match \/openapi\.json:/,
    );
    assert.match(
      run.stdout,
      /GET \/api\/settings -> 418 \(1×, e\.g\. GET \/api\/settings\): status 418 is not documented/,
    );
    assert.match(run.stdout, /GET \/auth\/session -> 200 .*\/authenticated must be boolean/);
  });
});
