/**
 * The order of the checks a REST request meets: rate limit, then session (401), then CSRF
 * (403), then its input. A malformed or mistyped body is an input problem: an anonymous
 * caller gets AUTH_REQUIRED whatever it sends, and a signed-in one the body's own issue.
 * And one rule, one issue code: a state that does not belong to the incident's kind is
 * `invalid_state_for_kind` on creation and on update alike.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, sharedApp, WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders, signIn, startProviders } from '../../helpers/providers.ts';
import { buildTestApp } from '../../helpers/app.ts';

const BAD_BODIES: [string, { body: string; type: string }, string][] = [
  ['malformed JSON', { body: '{"signature":', type: 'application/json' }, 'invalid_json'],
  ['an array', { body: '[]', type: 'application/json' }, 'invalid_type'],
  ['not JSON at all', { body: 'signature=x', type: 'application/x-www-form-urlencoded' }, 'unsupported_media_type'],
];
const ROUTES: [string, string][] = [
  ['POST', '/api/mail/sync'],
  ['PATCH', '/api/settings'],
  ['POST', '/auth/provider/disconnect'],
  ['POST', '/api/mail/threads/6f9619ff-8b86-4d01-b42d-00cf4fc964ff/draft'],
];

async function errorOf(res: Response) {
  const body = await res.json();
  return {
    status: res.status,
    code: body.error.code as string,
    issues: (body.error.details?.issues ?? []).map((i: { code: string }) => i.code),
  };
}

describe('401 before the body', () => {
  const app = sharedApp();

  it('answers an anonymous caller AUTH_REQUIRED whatever body it sends', async () => {
    for (const [method, path] of ROUTES) {
      for (const [why, { body, type }] of BAD_BODIES) {
        const res = await fetch(`${app().url}${path}`, {
          method,
          headers: { 'Content-Type': type, Origin: WEB_ORIGIN },
          body,
        });
        assert.deepEqual(
          await errorOf(res),
          { status: 401, code: 'AUTH_REQUIRED', issues: [] },
          `${method} ${path} with ${why}`,
        );
      }
    }
  });

  it("answers a signed-in caller the body's own issue, after CSRF", async (t) => {
    const providers = await startProviders(t);
    const own = await buildTestApp(t, { env: { ...providers.env, RATE_LIMIT_MAX: '100000' } });
    const browser = own.browser();
    const { csrfToken } = await signIn(browser);
    for (const [why, { body, type }, issue] of BAD_BODIES) {
      const noCsrf = await browser.fetch('/api/settings', { method: 'PATCH', headers: { 'Content-Type': type }, body });
      assert.equal((await errorOf(noCsrf)).code, 'CSRF_FAILED', `${why}: CSRF first`);
      const res = await browser.fetch('/api/settings', {
        method: 'PATCH',
        headers: { ...csrfHeaders(csrfToken, WEB_ORIGIN), 'Content-Type': type },
        body,
      });
      assert.deepEqual(await errorOf(res), { status: 400, code: 'VALIDATION_FAILED', issues: [issue] }, why);
    }
  });
});

describe('incident state rules', () => {
  const app = sharedApp();
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' };

  it('names a state of the other kind invalid_state_for_kind on POST and PATCH alike', async () => {
    const post = await fetch(`${app().url}/api/status/incidents`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({
        kind: 'maintenance',
        state: 'investigating',
        title: 't',
        message: 'm',
        affectedComponents: [],
      }),
    });
    const created = await fetch(`${app().url}/api/status/incidents`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({
        kind: 'maintenance',
        state: 'scheduled',
        title: 't',
        message: 'm',
        affectedComponents: [],
      }),
    });
    assert.equal(created.status, 201);
    const { id } = await created.json();
    const patch = await fetch(`${app().url}/api/status/incidents/${id}`, {
      method: 'PATCH',
      headers: admin,
      body: JSON.stringify({ state: 'investigating' }),
    });
    const expected = { status: 400, code: 'VALIDATION_FAILED', issues: ['invalid_state_for_kind'] };
    assert.deepEqual(await errorOf(post), expected);
    assert.deepEqual(await errorOf(patch), expected);
  });
});
