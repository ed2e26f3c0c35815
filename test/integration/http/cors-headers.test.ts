/**
 * CORS and response headers: the public routes are readable from any origin without
 * credentials; credentialed CORS only for WEB_ORIGIN; security headers and X-Request-Id on
 * every response, errors included.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, buildTestApp, sharedApp, WEB_ORIGIN, type TestApp } from '../../helpers/app.ts';

const OTHER_ORIGIN = 'https://elsewhere.example';

const lowerList = (v: string | null) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

describe('CORS', () => {
  const app = sharedApp();

  it('lets any origin read /health and /api/status/incidents, without credentials', async () => {
    for (const path of ['/health', '/api/status/incidents']) {
      for (const origin of [OTHER_ORIGIN, WEB_ORIGIN, 'null']) {
        const res = await fetch(`${app().url}${path}`, { headers: { Origin: origin } });
        assert.equal(res.status, 200, `${path} from ${origin}`);
        assert.equal(res.headers.get('access-control-allow-origin'), '*', `${path} from ${origin}`);
        assert.equal(
          res.headers.get('access-control-allow-credentials'),
          null,
          `${path} from ${origin}: no credentials`,
        );
        assert.ok(lowerList(res.headers.get('access-control-expose-headers')).includes('x-request-id'));
      }
    }
  });

  it("lets any origin read the public routes' errors too", async () => {
    const res = await fetch(`${app().url}/api/status/incidents`, {
      method: 'POST',
      headers: { Origin: OTHER_ORIGIN, 'Content-Type': 'application/json' },
      body: '{}',
    });
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.equal(res.headers.get('access-control-allow-credentials'), null);
  });

  it('answers a preflight for the public routes from any origin, without credentials', async () => {
    const res = await fetch(`${app().url}/health`, {
      method: 'OPTIONS',
      headers: { Origin: OTHER_ORIGIN, 'Access-Control-Request-Method': 'GET' },
    });
    assert.ok(res.status === 204 || res.status === 200, `status ${res.status}`);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.equal(res.headers.get('access-control-allow-credentials'), null);
  });

  it('allows credentialed CORS on /auth/session for WEB_ORIGIN only', async () => {
    const res = await fetch(`${app().url}/auth/session`, { headers: { Origin: WEB_ORIGIN } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), WEB_ORIGIN);
    assert.equal(res.headers.get('access-control-allow-credentials'), 'true');
    assert.ok(lowerList(res.headers.get('vary')).includes('origin'), 'Vary: Origin');

    for (const origin of [OTHER_ORIGIN, 'http://web.test:5174', 'http://web.test:5173.evil.example', 'null']) {
      const other = await fetch(`${app().url}/auth/session`, { headers: { Origin: origin } });
      assert.equal(other.status, 200);
      assert.equal(other.headers.get('access-control-allow-origin'), null, `no allow-origin for ${origin}`);
      assert.equal(other.headers.get('access-control-allow-credentials'), null, `no credentials for ${origin}`);
    }
  });

  it('applies the credentialed rule to /trpc too', async () => {
    const web = await fetch(`${app().url}/trpc/auth.session`, { headers: { Origin: WEB_ORIGIN } });
    assert.equal(web.headers.get('access-control-allow-origin'), WEB_ORIGIN);
    assert.equal(web.headers.get('access-control-allow-credentials'), 'true');
    const other = await fetch(`${app().url}/trpc/auth.session`, { headers: { Origin: OTHER_ORIGIN } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  it('answers a preflight from WEB_ORIGIN for a credentialed route, allowing X-CSRF-Token', async () => {
    for (const path of ['/auth/logout', '/trpc/auth.logout']) {
      const res = await fetch(`${app().url}${path}`, {
        method: 'OPTIONS',
        headers: {
          Origin: WEB_ORIGIN,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type, x-csrf-token',
        },
      });
      assert.ok(res.status === 204 || res.status === 200, `${path}: status ${res.status}`);
      assert.equal(res.headers.get('access-control-allow-origin'), WEB_ORIGIN, path);
      assert.equal(res.headers.get('access-control-allow-credentials'), 'true', path);
      const allowed = lowerList(res.headers.get('access-control-allow-headers'));
      assert.ok(allowed.includes('x-csrf-token'), `${path}: X-CSRF-Token allowed (${allowed})`);
      assert.ok(allowed.includes('content-type'), `${path}: Content-Type allowed`);
      assert.ok(lowerList(res.headers.get('access-control-allow-methods')).includes('post'), path);
      assert.ok(res.headers.get('x-request-id'), `${path}: X-Request-Id on the preflight`);
    }
  });

  it('does not approve a preflight from another origin for a credentialed route', async () => {
    const res = await fetch(`${app().url}/auth/logout`, {
      method: 'OPTIONS',
      headers: {
        Origin: OTHER_ORIGIN,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'x-csrf-token',
      },
    });
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.equal(res.headers.get('access-control-allow-credentials'), null);
  });
});

describe('headers on every response', () => {
  const app = sharedApp();
  const limitedHolder: { app?: TestApp } = {};
  let closeLimited: (() => unknown) | undefined;
  before(async () => {
    limitedHolder.app = await buildTestApp({ after: (fn) => (closeLimited = fn) }, { env: { RATE_LIMIT_MAX: '1' } });
  });
  after(() => closeLimited?.());

  /** A spread of responses: successes, HTML, JSON, every kind of error, a preflight, a 429. */
  async function responses(): Promise<[string, Response][]> {
    const u = app().url;
    const json = { 'Content-Type': 'application/json' };
    const out: [string, Response][] = [
      ['GET /health', await fetch(`${u}/health`)],
      ['GET /', await fetch(`${u}/`)],
      ['GET /openapi.json', await fetch(`${u}/openapi.json`)],
      ['GET /auth/session', await fetch(`${u}/auth/session`, { headers: { Origin: WEB_ORIGIN } })],
      ['POST /auth/logout', await fetch(`${u}/auth/logout`, { method: 'POST' })],
      ['GET /api/status/incidents', await fetch(`${u}/api/status/incidents`)],
      ['GET /trpc/system.health', await fetch(`${u}/trpc/system.health`)],
      ['GET /nope (404)', await fetch(`${u}/nope`)],
      ['GET /trpc/nope (404)', await fetch(`${u}/trpc/nope`)],
      ['POST incidents (403)', await fetch(`${u}/api/status/incidents`, { method: 'POST', headers: json, body: '{}' })],
      [
        'POST incidents malformed (400)',
        await fetch(`${u}/api/status/incidents`, {
          method: 'POST',
          headers: { ...json, Authorization: `Bearer ${ADMIN_TOKEN}` },
          body: '{',
        }),
      ],
      [
        'POST incidents text/plain (400)',
        await fetch(`${u}/api/status/incidents`, {
          method: 'POST',
          headers: { 'Content-Type': 'text/plain', Authorization: `Bearer ${ADMIN_TOKEN}` },
          body: 'x',
        }),
      ],
      [
        'PATCH incident unknown (404)',
        await fetch(`${u}/api/status/incidents/7b0f7a4e-1111-4222-8333-444455556666`, {
          method: 'PATCH',
          headers: { ...json, Authorization: `Bearer ${ADMIN_TOKEN}` },
          body: '{"title":"x"}',
        }),
      ],
      [
        'OPTIONS preflight',
        await fetch(`${u}/auth/logout`, {
          method: 'OPTIONS',
          headers: { Origin: WEB_ORIGIN, 'Access-Control-Request-Method': 'POST' },
        }),
      ],
    ];
    const l = limitedHolder.app!.url;
    await fetch(`${l}/auth/session`);
    out.push(['GET /auth/session (429)', await fetch(`${l}/auth/session`)]);
    out.push(['GET /health (429)', await fetch(`${l}/health`)]);
    return out;
  }

  it('sends the security headers on every response', async () => {
    const all = await responses();
    assert.ok(
      all.some(([, r]) => r.status === 429),
      'a 429 is among them',
    );
    for (const [name, res] of all) {
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${name}: nosniff`);
      assert.match(res.headers.get('x-frame-options') ?? '', /^(DENY|SAMEORIGIN)$/i, `${name}: X-Frame-Options`);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'self'/, `${name}: Content-Security-Policy`);
      assert.match(csp, /frame-ancestors 'none'/, `${name}: CSP frame-ancestors`);
      assert.ok(res.headers.get('referrer-policy'), `${name}: Referrer-Policy`);
      assert.equal(res.headers.get('strict-transport-security'), null, `${name}: no HSTS over plain http`);
      await res.arrayBuffer();
    }
  });

  it('sends X-Request-Id on every response, errors included, matching the body of errors', async () => {
    const seen = new Set<string>();
    for (const [name, res] of await responses()) {
      const id = res.headers.get('x-request-id');
      assert.ok(id && id.length >= 8, `${name}: X-Request-Id`);
      assert.ok(!seen.has(id), `${name}: a new id per request`);
      seen.add(id);
      const text = await res.text();
      if (res.status >= 400 && name.includes('/trpc')) assert.equal(JSON.parse(text).error.data.requestId, id, name);
      else if (res.status >= 400) assert.equal(JSON.parse(text).error.requestId, id, name);
    }
  });

  it('sends HSTS when PUBLIC_BASE_URL is https', async (t) => {
    const secure = await buildTestApp(t, { env: { PUBLIC_BASE_URL: 'https://mail.example.com' } });
    const res = await fetch(`${secure.url}/health`);
    assert.match(res.headers.get('strict-transport-security') ?? '', /max-age=\d+/);
  });
});
