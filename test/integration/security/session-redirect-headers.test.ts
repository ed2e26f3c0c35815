/**
 * Security: session fixation, open redirects on the OAuth routes, and the security headers
 * of the mail, AI and settings routes (test/integration/http covers the others), success and
 * error, REST and /trpc.
 *
 * Fixation beyond test/integration/auth/sessions.test.ts: a cookie value chosen by an
 * attacker (unsigned, signed with a guessed key, an expired session's) is never adopted at
 * sign-in, and no anonymous request ever creates a session an attacker could plant.
 * Redirects: whatever the query, the Host, X-Forwarded-Host/Proto, Referer or path tricks,
 * GET /auth/provider goes to GOOGLE_AUTH_URL with the configured redirect_uri only, and the
 * callback goes to WEB_ORIGIN with connected=1 or error=oauth_failed only.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import fc from 'fast-check';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { asUser, ClientBrowser, expectError, sharedReviewWorld } from './review-world.ts';

const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
/** The signature cookies' `.sig` carries (keygrip: sha1 HMAC, base64url). */
const sign = (data: string, key: string) => createHmac('sha1', key).update(data).digest('base64url');

describe('session fixation', () => {
  const world = sharedReviewWorld();

  it('no anonymous request creates a session or sets a session cookie', async () => {
    const w = world();
    const rowsBefore = (await w.sql('select id from sessions')).length;
    const b = w.stranger(WEB_ORIGIN);
    const answers = [
      await b.fetch('/auth/session'),
      await b.fetch('/auth/session'),
      await b.fetch('/api/analytics/event', {
        method: 'POST',
        json: { event: 'page_view', properties: { path: '/' } },
      }),
      await b.fetch('/auth/logout', { method: 'POST' }),
      await b.fetch('/auth/provider'),
      await b.fetch('/auth/provider/callback?state=x&code=y'),
      await b.fetch('/trpc/auth.session'),
      await b.fetch('/api/mail/threads'),
    ];
    for (const res of answers) {
      assert.ok(
        !res.headers.getSetCookie().some((c) => /^mia_session=[^;]/.test(c)),
        `${res.url}: no session cookie set`,
      );
    }
    assert.equal((await w.sql('select id from sessions')).length, rowsBefore, 'no session row');
    // Two anonymous calls get unrelated CSRF tokens: nothing binds a token before sign-in.
    const [s1, s2] = [
      await (await w.stranger().fetch('/auth/session')).json(),
      await (await w.stranger().fetch('/auth/session')).json(),
    ];
    assert.notEqual(s1.csrfToken, s2.csrfToken);
  });

  it('a session key chosen by an attacker is never adopted at sign-in', async () => {
    const w = world();
    const chosen = randomBytes(32).toString('base64url');
    // An expired session of the attacker's own, its row still in place.
    const mallory = await w.signIn({ sub: 'user-mallory', email: 'mallory@example.com' });
    const expiredKey = mallory.browser.cookies.get('mia_session')!;
    const expiredSig = mallory.browser.cookies.get('mia_session.sig')!;
    await w.sql(`update sessions set expires_at = now() - interval '1 minute' where id = $1`, [sha256(expiredKey)]);
    const plants: [string, Record<string, string>][] = [
      ['unsigned', { mia_session: chosen }],
      [
        'signed with a guessed key',
        { mia_session: chosen, 'mia_session.sig': sign(`mia_session=${chosen}`, 'secret') },
      ],
      ['an expired session', { mia_session: expiredKey, 'mia_session.sig': expiredSig }],
    ];
    for (const [why, cookies] of plants) {
      const victim = new ClientBrowser(w.app.url, WEB_ORIGIN);
      for (const [k, v] of Object.entries(cookies)) victim.cookies.set(k, v);
      assert.equal(
        (await (await victim.fetch('/auth/session')).json()).authenticated,
        false,
        `${why}: planted cookie authenticates nothing`,
      );
      await w.signIn({ sub: 'user-victim', email: 'victim@example.com' }, victim);
      const key = victim.cookies.get('mia_session')!;
      assert.notEqual(key, cookies.mia_session, `${why}: a new key after sign-in`);
      const rows = await w.sql<{ id: string; account_id: string }>(
        'select id, account_id from sessions where id = any($1) and expires_at > now()',
        [[sha256(chosen), sha256(expiredKey), sha256(key)]],
      );
      assert.deepEqual(
        rows.map((r) => r.id),
        [sha256(key)],
        `${why}: only the new key has a live row`,
      );
      // Whoever holds the planted value still has nothing.
      const attacker = new ClientBrowser(w.app.url, WEB_ORIGIN);
      for (const [k, v] of Object.entries(cookies)) attacker.cookies.set(k, v);
      const s = await (await attacker.fetch('/auth/session')).json();
      assert.equal(s.authenticated, false, `${why}: the planted cookie is not the victim's session`);
      await expectError(
        await attacker.fetch('/api/mail/threads'),
        'AUTH_REQUIRED',
        401,
        `${why}: the planted cookie reads no mail`,
      );
    }
  });
});

describe('open redirects on the OAuth routes', () => {
  const world = sharedReviewWorld();
  const EVIL = [
    'https://evil.example/',
    '//evil.example',
    '/\\evil.example',
    'https:evil.example',
    '%2F%2Fevil.example',
    'javascript:alert(1)',
    'http://web.test:5173.evil.example/',
    `${WEB_ORIGIN}@evil.example`,
  ];
  // Built while the file loads, before any server: fc.webUrl() takes seconds of CPU to build. Built
  // inside a test it stalled the event loop (9 s on a loaded machine) past the server's 5 s
  // keep-alive timeout, and the next request went out on a connection the server was closing
  // (ECONNRESET).
  const webUrl = fc.webUrl();

  it('GET /auth/provider goes to the consent screen with the configured redirect_uri, whatever the request says', async () => {
    const w = world();
    const authUrl = new URL(w.providers.identity.authUrl);
    const callbackUrl = `${w.app.config.publicBaseUrl}/auth/provider/callback`;
    const param = fc.oneof(fc.constantFrom(...EVIL), webUrl, fc.string({ maxLength: 20 }));
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(
          fc.constantFrom(
            'redirect',
            'next',
            'return_to',
            'redirect_uri',
            'returnTo',
            'continue',
            'url',
            'state',
            'client_id',
            'scope',
            'response_type',
          ),
          param,
          { maxKeys: 4 },
        ),
        fc.record(
          {
            'X-Forwarded-Host': fc.constantFrom('evil.example', 'web.test:5173', ''),
            'X-Forwarded-Proto': fc.constantFrom('https', 'javascript', 'http'),
            Referer: fc.constantFrom(...EVIL),
          },
          { requiredKeys: [] },
        ),
        async (query, headers) => {
          const qs = new URLSearchParams(query).toString();
          const res = await w.stranger().fetch(`/auth/provider${qs ? `?${qs}` : ''}`, { headers });
          assert.equal(res.status, 302);
          const location = new URL(res.headers.get('location')!);
          assert.equal(
            `${location.origin}${location.pathname}`,
            `${authUrl.origin}${authUrl.pathname}`,
            'the consent screen',
          );
          assert.equal(location.searchParams.get('redirect_uri'), callbackUrl, 'the configured callback');
          assert.equal(location.searchParams.get('client_id'), w.providers.identity.clientId);
          assert.ok(!location.toString().includes('evil'), `nothing of the request in ${location}`);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('GET /auth/provider/callback goes to the web app only, on success and on every failure', async () => {
    const w = world();
    const allowed = new Set([`${WEB_ORIGIN}/?error=oauth_failed`, `${WEB_ORIGIN}/?connected=1`]);
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(
          fc.constantFrom(
            'redirect',
            'next',
            'return_to',
            'redirect_uri',
            'error',
            'error_description',
            'state',
            'code',
          ),
          fc.oneof(fc.constantFrom(...EVIL), webUrl),
          { maxKeys: 4 },
        ),
        fc.constantFrom('evil.example', 'web.test:5173', ''),
        async (query, forwardedHost) => {
          const res = await w.stranger().fetch(`/auth/provider/callback?${new URLSearchParams(query)}`, {
            headers: { 'X-Forwarded-Host': forwardedHost },
          });
          assert.equal(res.status, 302);
          assert.equal(res.headers.get('location'), `${WEB_ORIGIN}/?error=oauth_failed`);
        },
      ),
      { numRuns: 40 },
    );
    // A real sign-in with every redirect parameter and forwarded header set still lands on WEB_ORIGIN.
    w.providers.identity.setCurrentUser({ sub: 'user-dana', email: 'dana@example.com' });
    const browser = new ClientBrowser(w.app.url, WEB_ORIGIN);
    const spoof = {
      'X-Forwarded-Host': 'evil.example',
      'X-Forwarded-Proto': 'https',
      Referer: 'https://evil.example/',
    };
    const start = await browser.fetch(`/auth/provider?next=${encodeURIComponent('https://evil.example/')}`, {
      headers: spoof,
    });
    const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const back = new URL(consent.headers.get('location')!);
    assert.equal(`${back.origin}${back.pathname}`, `${w.app.config.publicBaseUrl}/auth/provider/callback`);
    const done = await browser.fetch(
      `${back.pathname}${back.search}&next=${encodeURIComponent('//evil.example')}&redirect_uri=${encodeURIComponent('https://evil.example/')}`,
      { headers: spoof },
    );
    assert.ok(allowed.has(done.headers.get('location')!), `location ${done.headers.get('location')}`);
    assert.equal(done.headers.get('location'), `${WEB_ORIGIN}/?connected=1`);
  });

  it('a spoofed Host and path tricks never redirect off-site', async () => {
    const w = world();
    const url = new URL(w.app.url);
    const raw = (path: string, host: string) =>
      new Promise<{ status: number; location?: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: url.hostname,
            port: url.port,
            path,
            headers: { Host: host, 'X-Forwarded-For': `10.61.0.${Math.floor(Math.random() * 250)}` },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, location: res.headers.location }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    const authOrigin = new URL(w.providers.identity.authUrl).origin;
    for (const host of ['evil.example', `${url.host}.evil.example`, 'web.test:5173']) {
      for (const path of [
        '/auth/provider',
        '/auth/provider?next=//evil.example',
        '/auth/provider/callback?state=x&code=y',
        '//evil.example/auth/provider',
        '/auth/provider/',
        '/auth/provider/callback/',
        '/auth/provider/..%2F..%2Fevil.example',
        '/%2F%2Fevil.example/auth/provider',
        '/auth//provider',
      ]) {
        const res = await raw(path, host);
        if (res.status >= 300 && res.status < 400) {
          const location = res.location ?? '';
          assert.ok(
            location.startsWith(`${authOrigin}/`) || location === `${WEB_ORIGIN}/?error=oauth_failed`,
            `${path} with Host ${host}: redirect to ${location}`,
          );
          if (location.startsWith(authOrigin))
            assert.equal(
              new URL(location).searchParams.get('redirect_uri'),
              `${w.app.config.publicBaseUrl}/auth/provider/callback`,
            );
        } else assert.equal(res.status, 404, `${path} with Host ${host}: not found (${res.status})`);
      }
    }
  });
});

describe('security headers on the mail, AI and settings routes', () => {
  const world = sharedReviewWorld();

  it('every answer, success or error, REST or /trpc, carries them', async () => {
    const w = world();
    const { alice } = w;
    const b = () => asUser(w, alice);
    const csrf = { 'X-CSRF-Token': alice.csrfToken, Origin: WEB_ORIGIN };
    const thread = alice.threadIds[0];
    const input = (v: unknown) => encodeURIComponent(JSON.stringify(v));
    const answers: [string, Response][] = [
      ['GET /api/mail/threads', await b().fetch('/api/mail/threads')],
      ['GET /api/mail/threads/:id', await b().fetch(`/api/mail/threads/${thread}`)],
      ['GET /api/mail/sync-state', await b().fetch('/api/mail/sync-state')],
      ['POST /api/mail/sync', await b().fetch('/api/mail/sync', { method: 'POST', headers: csrf })],
      ['POST analyze', await b().fetch(`/api/mail/threads/${thread}/analyze`, { method: 'POST', headers: csrf })],
      ['POST draft', await b().fetch(`/api/mail/threads/${thread}/draft`, { method: 'POST', headers: csrf })],
      ['GET /api/settings', await b().fetch('/api/settings')],
      [
        'PATCH /api/settings',
        await b().fetch('/api/settings', { method: 'PATCH', headers: csrf, json: { signature: 'S' } }),
      ],
      ['GET /auth/session', await b().fetch('/auth/session')],
      ['GET /trpc/mail.threads', await b().fetch(`/trpc/mail.threads?input=${input({})}`)],
      ['GET /trpc/mail.thread', await b().fetch(`/trpc/mail.thread?input=${input({ threadId: thread })}`)],
      ['GET /trpc/settings.get', await b().fetch('/trpc/settings.get')],
      [
        'POST /trpc/mail.draft',
        await b().fetch('/trpc/mail.draft', { method: 'POST', headers: csrf, json: { threadId: thread } }),
      ],
      ['401 GET /api/mail/threads', await w.stranger().fetch('/api/mail/threads')],
      ['403 POST /api/mail/sync', await b().fetch('/api/mail/sync', { method: 'POST' })],
      ['400 GET /api/mail/threads?limit=0', await b().fetch('/api/mail/threads?limit=0')],
      ['404 GET /api/mail/threads/:unknown', await b().fetch('/api/mail/threads/7b0f7a4e-1111-4222-8333-444455556666')],
      [
        '400 PATCH /api/settings',
        await b().fetch('/api/settings', { method: 'PATCH', headers: csrf, json: { tone: 1 } }),
      ],
      ['401 /trpc/mail.threads', await w.stranger().fetch('/trpc/mail.threads')],
      [
        '403 /trpc/settings.update',
        await b().fetch('/trpc/settings.update', { method: 'POST', json: { signature: 'x' } }),
      ],
      [
        '400 /trpc/mail.draft',
        await b().fetch('/trpc/mail.draft', { method: 'POST', headers: csrf, json: { threadId: 'nope' } }),
      ],
      [
        '400 /trpc/settings.update (text/plain)',
        await b().fetch('/trpc/settings.update', {
          method: 'POST',
          headers: { ...csrf, 'Content-Type': 'text/plain' },
          body: '{}',
        }),
      ],
    ];
    assert.ok(
      answers.filter(([, r]) => r.status < 300).length >= 12 && answers.filter(([, r]) => r.status >= 400).length >= 8,
      'successes and errors',
    );
    for (const [name, res] of answers) {
      const h = (k: string) => res.headers.get(k);
      assert.equal(h('x-content-type-options'), 'nosniff', `${name}: nosniff`);
      assert.match(h('x-frame-options') ?? '', /^(DENY|SAMEORIGIN)$/i, `${name}: X-Frame-Options`);
      assert.match(h('content-security-policy') ?? '', /default-src 'self'/, `${name}: CSP`);
      assert.match(h('content-security-policy') ?? '', /frame-ancestors 'none'/, `${name}: CSP frame-ancestors`);
      assert.equal(h('referrer-policy'), 'no-referrer', `${name}: Referrer-Policy`);
      assert.equal(h('cross-origin-resource-policy'), 'same-site', `${name}: not readable cross-site`);
      assert.equal(h('cache-control'), 'no-store', `${name}: never cached (mail, settings and CSRF tokens)`);
      assert.equal(h('x-powered-by'), null, `${name}: no X-Powered-By`);
      assert.match(h('content-type') ?? '', /^application\/json/, `${name}: JSON`);
      assert.match(h('x-request-id') ?? '', /^[0-9a-f-]{36}$/, `${name}: request id`);
      await res.arrayBuffer();
    }
  });

  it('credentialed CORS on these routes for WEB_ORIGIN only', async () => {
    const w = world();
    const { alice } = w;
    for (const path of [
      '/api/mail/threads',
      `/api/mail/threads/${alice.threadIds[0]}`,
      '/api/settings',
      '/trpc/mail.threads',
      '/api/mail/sync-state',
    ]) {
      const evil = await asUser(w, alice).fetch(path, { headers: { Origin: 'https://evil.example' } });
      assert.equal(evil.headers.get('access-control-allow-origin'), null, `${path}: no CORS grant to another origin`);
      assert.equal(
        evil.headers.get('access-control-allow-credentials'),
        null,
        `${path}: no credentials to another origin`,
      );
      await evil.arrayBuffer();
      const ok = await asUser(w, alice).fetch(path, { headers: { Origin: WEB_ORIGIN } });
      assert.equal(ok.headers.get('access-control-allow-origin'), WEB_ORIGIN, `${path}: the web app may read it`);
      assert.equal(ok.headers.get('access-control-allow-credentials'), 'true');
      assert.match(ok.headers.get('vary') ?? '', /Origin/i, `${path}: Vary: Origin`);
      await ok.arrayBuffer();
      const preflight = await w.stranger().fetch(path, {
        method: 'OPTIONS',
        headers: {
          Origin: 'https://evil.example',
          'Access-Control-Request-Method': 'PATCH',
          'Access-Control-Request-Headers': 'x-csrf-token',
        },
      });
      assert.equal(
        preflight.headers.get('access-control-allow-origin'),
        null,
        `${path}: a foreign preflight is not approved`,
      );
      await preflight.arrayBuffer();
    }
  });
});
