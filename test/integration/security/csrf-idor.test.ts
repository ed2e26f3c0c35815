/**
 * Security: CSRF and cross-account access.
 *
 * CSRF: every state-changing route, REST and /trpc (sync, analyze, draft, settings update,
 * and, for the cases test/integration/auth does not cover, disconnect and account deletion),
 * refuses with CSRF_FAILED and does nothing unless X-CSRF-Token is the session's token AND
 * Origin is WEB_ORIGIN: tokens of another session, truncated or extended, sent in the query or
 * the body instead of the header, doubled; Origins that only look alike, a Referer instead;
 * cross-site form submissions; and a GET never mutates. Every mutation of the app router is
 * classified, so a new one cannot slip in without a decision.
 *
 * Cross-account (IDOR): another account's thread id on every id-taking route (thread detail,
 * analyze, draft; REST, /trpc, batched) is NOT_FOUND exactly like an unknown id, and nothing
 * of the other account leaks or is touched (no body fetched, no AI call, no row written).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appRouter } from '../../../server/trpc/routers/index.ts';
import { ADMIN_TOKEN, WEB_ORIGIN } from '../../helpers/app.ts';
import {
  asUser,
  expectError,
  sharedReviewWorld,
  snapshot,
  type ClientBrowser,
  type ReviewWorld,
} from './review-world.ts';

const JSON_TYPE = { 'Content-Type': 'application/json' };

interface Route {
  name: string;
  /** Sends the call from `b` with exactly `headers` added (Content-Type included where a body goes). */
  send(
    b: ClientBrowser,
    headers: Record<string, string>,
    extra?: { query?: string; body?: Record<string, unknown> },
  ): Promise<Response>;
}

function routes(world: () => ReviewWorld): Route[] {
  const thread = () => world().alice.threadIds[0];
  const rest =
    (method: string, path: () => string, body?: () => Record<string, unknown>): Route['send'] =>
    (b, headers, extra = {}) => {
      const json = body || extra.body ? { ...body?.(), ...extra.body } : undefined;
      return b.fetch(`${path()}${extra.query ?? ''}`, { method, headers, ...(json ? { json } : {}) });
    };
  const trpc =
    (proc: string, input: () => Record<string, unknown>): Route['send'] =>
    (b, headers, extra = {}) =>
      b.fetch(`/trpc/${proc}${extra.query ?? ''}`, {
        method: 'POST',
        headers: { ...JSON_TYPE, ...headers },
        body: JSON.stringify({ ...input(), ...extra.body }),
      });
  return [
    { name: 'POST /api/mail/sync', send: rest('POST', () => '/api/mail/sync') },
    { name: 'POST /trpc/mail.sync', send: trpc('mail.sync', () => ({})) },
    { name: 'POST /api/mail/threads/:id/analyze', send: rest('POST', () => `/api/mail/threads/${thread()}/analyze`) },
    { name: 'POST /trpc/mail.analyze', send: trpc('mail.analyze', () => ({ threadId: thread() })) },
    // After analyze: the control call corrects the analysis analyze made.
    {
      name: 'PUT /api/mail/threads/:id/analysis',
      send: rest(
        'PUT',
        () => `/api/mail/threads/${thread()}/analysis`,
        () => ({ priority: 'LOW' }),
      ),
    },
    {
      name: 'POST /trpc/mail.correctAnalysis',
      send: trpc('mail.correctAnalysis', () => ({ threadId: thread(), replyStatus: 'NO_REPLY_NEEDED' })),
    },
    {
      name: 'POST /api/mail/threads/:id/draft',
      send: rest(
        'POST',
        () => `/api/mail/threads/${thread()}/draft`,
        () => ({ tone: 'friendly' }),
      ),
    },
    { name: 'POST /trpc/mail.draft', send: trpc('mail.draft', () => ({ threadId: thread(), tone: 'friendly' })) },
    {
      name: 'PATCH /api/settings',
      send: rest(
        'PATCH',
        () => '/api/settings',
        () => ({ signature: 'hijacked' }),
      ),
    },
    { name: 'POST /trpc/settings.update', send: trpc('settings.update', () => ({ signature: 'hijacked' })) },
    { name: 'POST /auth/provider/disconnect', send: rest('POST', () => '/auth/provider/disconnect') },
    { name: 'POST /trpc/auth.disconnect', send: trpc('auth.disconnect', () => ({})) },
    {
      name: 'DELETE /auth/account',
      send: rest(
        'DELETE',
        () => '/auth/account',
        () => ({ confirm: true }),
      ),
    },
    { name: 'POST /trpc/auth.deleteAccount', send: trpc('auth.deleteAccount', () => ({ confirm: true })) },
  ];
}

/** Disconnect and deletion: the basic cases live in test/integration/auth/csrf-and-auth-required.test.ts. */
const BASIC_COVERED_ELSEWHERE = new Set([
  'POST /auth/provider/disconnect',
  'POST /trpc/auth.disconnect',
  'DELETE /auth/account',
  'POST /trpc/auth.deleteAccount',
]);

describe('CSRF on every state-changing route, REST and /trpc', () => {
  const world = sharedReviewWorld();

  it('refuses every wrong token and every wrong Origin with CSRF_FAILED, doing nothing', async () => {
    const w = world();
    const { alice, bob } = w;
    const token = alice.csrfToken;
    const flipped =
      token.replace(/[a-z]/, (c) => c.toUpperCase()) === token
        ? token.replace(/[A-Z]/, (c) => c.toLowerCase())
        : token.replace(/[a-z]/, (c) => c.toUpperCase());
    const cases: {
      why: string;
      headers: Record<string, string>;
      extra?: { query?: string; body?: Record<string, unknown> };
      basic?: boolean;
    }[] = [
      { why: 'no token', headers: { Origin: WEB_ORIGIN }, basic: true },
      { why: 'empty token', headers: { Origin: WEB_ORIGIN, 'X-CSRF-Token': '' }, basic: true },
      {
        why: 'a wrong token',
        headers: { Origin: WEB_ORIGIN, 'X-CSRF-Token': `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}` },
        basic: true,
      },
      {
        why: "another live session's token",
        headers: { Origin: WEB_ORIGIN, 'X-CSRF-Token': bob.csrfToken },
        basic: true,
      },
      { why: 'the token with a suffix', headers: { Origin: WEB_ORIGIN, 'X-CSRF-Token': `${token}0` }, basic: true },
      { why: 'a prefix of the token', headers: { Origin: WEB_ORIGIN, 'X-CSRF-Token': token.slice(0, 8) } },
      { why: 'the token with its case changed', headers: { Origin: WEB_ORIGIN, 'X-CSRF-Token': flipped } },
      {
        why: 'the token twice, once wrong (one merged header)',
        headers: { Origin: WEB_ORIGIN, 'X-CSRF-Token': `${token}, ${bob.csrfToken}` },
      },
      {
        why: 'the token in the query string',
        headers: { Origin: WEB_ORIGIN },
        extra: { query: `?csrfToken=${token}&_csrf=${token}` },
      },
      { why: 'the token in the body', headers: { Origin: WEB_ORIGIN }, extra: { body: { csrfToken: token } } },
      { why: 'a foreign Origin', headers: { Origin: 'https://evil.example', 'X-CSRF-Token': token }, basic: true },
      {
        why: 'the Origin over https',
        headers: { Origin: WEB_ORIGIN.replace('http:', 'https:'), 'X-CSRF-Token': token },
      },
      {
        why: 'the Origin of a sibling host',
        headers: { Origin: WEB_ORIGIN.replace('web.test', 'web.test.evil.example'), 'X-CSRF-Token': token },
      },
      { why: 'the Origin with a path', headers: { Origin: `${WEB_ORIGIN}/`, 'X-CSRF-Token': token }, basic: true },
      { why: 'Origin null (sandboxed frame)', headers: { Origin: 'null', 'X-CSRF-Token': token }, basic: true },
      {
        why: 'two Origins (one merged header)',
        headers: { Origin: `${WEB_ORIGIN}, https://evil.example`, 'X-CSRF-Token': token },
      },
      {
        why: 'no Origin, a Referer of the web app instead',
        headers: { Referer: `${WEB_ORIGIN}/inbox`, 'X-CSRF-Token': token },
      },
      { why: 'neither', headers: {}, basic: true },
    ];
    const before = await snapshot(w);
    let refused = 0;
    for (const route of routes(world)) {
      for (const c of cases) {
        if (c.basic && BASIC_COVERED_ELSEWHERE.has(route.name)) continue;
        const res = await route.send(asUser(w, alice), c.headers, c.extra);
        await expectError(res, 'CSRF_FAILED', 403, `${route.name} with ${c.why}`);
        refused += 1;
      }
    }
    assert.equal(refused, 10 * cases.length + 4 * cases.filter((c) => !c.basic).length, 'every case on every route');
    assert.deepEqual(await snapshot(w), before, 'no provider call, no row written, no session ended');
    assert.equal(
      (await (await asUser(w, alice).fetch('/auth/session')).json()).authenticated,
      true,
      'alice is still signed in',
    );
  });

  it('refuses cross-site form submissions and never mutates on GET', async () => {
    const w = world();
    const { alice } = w;
    const before = await snapshot(w);
    // Refused one way or another (an unsupported body type, a missing token): nothing runs.
    const forms: [string, Promise<Response>, string, number][] = [];
    const b = () => asUser(w, alice);
    for (const [type, body] of [
      ['application/x-www-form-urlencoded', 'signature=hijacked'],
      ['text/plain', '{"signature":"hijacked"}'],
      [
        'multipart/form-data; boundary=x',
        '--x\r\nContent-Disposition: form-data; name="signature"\r\n\r\nhijacked\r\n--x--\r\n',
      ],
    ]) {
      const headers = { 'Content-Type': type, Origin: 'https://evil.example' };
      forms.push([
        `form POST /api/mail/sync (${type})`,
        b().fetch('/api/mail/sync', { method: 'POST', headers, body }),
        '',
        0,
      ]);
      forms.push([
        `form POST /trpc/settings.update (${type})`,
        b().fetch('/trpc/settings.update', { method: 'POST', headers, body }),
        '',
        0,
      ]);
      forms.push([
        `form POST /api/mail/threads/:id/draft (${type})`,
        b().fetch(`/api/mail/threads/${alice.threadIds[0]}/draft`, { method: 'POST', headers, body }),
        '',
        0,
      ]);
    }
    for (const [why, p, code, status] of forms) {
      const res = await p;
      if (code) await expectError(res, code, status, why);
      else assert.ok([400, 403, 415].includes(res.status), `${why}: refused (${res.status})`);
    }
    // GET (an <img>, a link) never runs a mutation, with or without the token.
    const headers = { 'X-CSRF-Token': alice.csrfToken, Origin: WEB_ORIGIN };
    for (const path of [
      '/api/mail/sync',
      `/api/mail/threads/${alice.threadIds[0]}/analyze`,
      `/api/mail/threads/${alice.threadIds[0]}/draft`,
      '/auth/provider/disconnect',
      '/auth/account',
    ]) {
      await expectError(await b().fetch(path, { headers }), 'NOT_FOUND', 404, `GET ${path}`);
    }
    for (const [proc, input] of [
      ['mail.sync', {}],
      ['mail.analyze', { threadId: alice.threadIds[0] }],
      ['mail.draft', { threadId: alice.threadIds[0] }],
      ['settings.update', { signature: 'hijacked' }],
      ['auth.disconnect', {}],
      ['auth.deleteAccount', { confirm: true }],
    ] as const) {
      const res = await b().fetch(`/trpc/${proc}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers });
      assert.ok(res.status === 404 || res.status === 405, `GET /trpc/${proc}: refused (${res.status})`);
      assert.equal((await res.json()).error.data.appCode, 'NOT_FOUND', `GET /trpc/${proc}`);
    }
    assert.deepEqual(await snapshot(w), before, 'nothing done');
  });

  it('accepts the right token with the right Origin on every route (control), REST and /trpc', async () => {
    const w = world();
    const { alice } = w;
    const headers = { 'X-CSRF-Token': alice.csrfToken, Origin: WEB_ORIGIN };
    for (const route of routes(world)) {
      if (BASIC_COVERED_ELSEWHERE.has(route.name)) continue;
      const res = await route.send(asUser(w, alice), headers);
      assert.equal(res.status, 200, `${route.name}: ${await res.clone().text()}`);
    }
    const settings = await (await asUser(w, alice).fetch('/api/settings')).json();
    assert.equal(settings.signature, 'hijacked', 'the control call took effect');
  });

  it('every mutation of the app router is classified, and each one that needs a session needs the CSRF token', async () => {
    const w = world();
    // What a signed-in call without token and Origin gets, per mutation (api-spec parts 4, 5.4, 5.5, 5.8).
    const EXPECTED: Record<string, { code?: string; input: unknown }> = {
      'auth.logout': { input: undefined }, // needs no CSRF token (spec 5.5)
      'analytics.event': { input: { event: 'some_unknown_event' } }, // needs no CSRF token (spec 5.5)
      'auth.disconnect': { code: 'CSRF_FAILED', input: {} },
      'auth.deleteAccount': { code: 'CSRF_FAILED', input: { confirm: true } },
      'mail.sync': { code: 'CSRF_FAILED', input: {} },
      'mail.analyze': { code: 'CSRF_FAILED', input: { threadId: w.alice.threadIds[0] } },
      'mail.draft': { code: 'CSRF_FAILED', input: { threadId: w.alice.threadIds[0] } },
      'mail.correctAnalysis': { code: 'CSRF_FAILED', input: { threadId: w.alice.threadIds[0], priority: 'LOW' } },
      'settings.update': { code: 'CSRF_FAILED', input: { signature: 'x' } },
      'status.createIncident': { code: 'FORBIDDEN', input: {} }, // status-admin credential instead
      'status.updateIncident': { code: 'FORBIDDEN', input: { id: '7b0f7a4e-1111-4222-8333-444455556666' } },
    };
    const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { type: string } }>;
    const mutations = Object.keys(procedures)
      .filter((p) => procedures[p]._def.type === 'mutation')
      .sort();
    assert.deepEqual(mutations, Object.keys(EXPECTED).sort(), 'a new mutation must be classified here');
    // A throwaway session for the calls that would end or change it.
    const { browser } = await w.signIn({ sub: 'user-carol', email: 'carol@example.com' });
    const before = await snapshot(w);
    for (const [proc, { code, input }] of Object.entries(EXPECTED)) {
      if (!code) continue;
      const b = asUser(w, { ...w.alice, browser });
      const res = await b.fetch(`/trpc/${proc}`, {
        method: 'POST',
        headers: { ...JSON_TYPE, Authorization: `Bearer ${ADMIN_TOKEN}x` },
        body: JSON.stringify(input),
      });
      await expectError(res, code, 403, `/trpc/${proc} signed in, without CSRF token`);
    }
    assert.deepEqual(await snapshot(w), before, 'nothing done');
    for (const proc of ['analytics.event', 'auth.logout']) {
      const b = asUser(w, { ...w.alice, browser });
      const res = await b.fetch(`/trpc/${proc}`, {
        method: 'POST',
        headers: JSON_TYPE,
        body: JSON.stringify(EXPECTED[proc].input ?? {}),
      });
      assert.equal(res.status, 200, `${proc} needs no token: ${await res.clone().text()}`);
    }
  });
});

describe("another account's thread id on every id-taking route", () => {
  const world = sharedReviewWorld();

  /** Every id-taking call, from `b` (with its CSRF token where needed), on `threadId`. */
  const calls = (b: () => ClientBrowser, csrf: string) => {
    const headers = { 'X-CSRF-Token': csrf, Origin: WEB_ORIGIN };
    return [
      { name: 'GET /api/mail/threads/:id', send: (id: string) => b().fetch(`/api/mail/threads/${id}`) },
      {
        name: 'GET /trpc/mail.thread',
        send: (id: string) =>
          b().fetch(`/trpc/mail.thread?input=${encodeURIComponent(JSON.stringify({ threadId: id }))}`),
      },
      {
        name: 'POST /api/mail/threads/:id/analyze',
        send: (id: string) => b().fetch(`/api/mail/threads/${id}/analyze`, { method: 'POST', headers }),
      },
      {
        name: 'POST /trpc/mail.analyze',
        send: (id: string) => b().fetch('/trpc/mail.analyze', { method: 'POST', headers, json: { threadId: id } }),
      },
      {
        name: 'POST /api/mail/threads/:id/draft',
        send: (id: string) =>
          b().fetch(`/api/mail/threads/${id}/draft`, {
            method: 'POST',
            headers,
            json: { tone: 'professional', language: 'English' },
          }),
      },
      {
        name: 'POST /trpc/mail.draft',
        send: (id: string) =>
          b().fetch('/trpc/mail.draft', { method: 'POST', headers, json: { threadId: id, length: 'short' } }),
      },
      {
        name: 'PUT /api/mail/threads/:id/analysis',
        send: (id: string) =>
          b().fetch(`/api/mail/threads/${id}/analysis`, { method: 'PUT', headers, json: { priority: 'LOW' } }),
      },
      {
        name: 'POST /trpc/mail.correctAnalysis',
        send: (id: string) =>
          b().fetch('/trpc/mail.correctAnalysis', { method: 'POST', headers, json: { threadId: id, priority: 'LOW' } }),
      },
    ];
  };

  /** The answer without its request id, to compare two refusals. */
  const shape = (text: string) => text.replace(/"requestId":"[^"]+"/, '"requestId":"-"');

  it('is NOT_FOUND exactly like an unknown id, REST and /trpc, touching and revealing nothing of the other account', async () => {
    const w = world();
    const { alice, bob } = w;
    const b = () => asUser(w, alice);
    const before = await snapshot(w);
    const unknown = '7b0f7a4e-1111-4222-8333-444455556666';
    let checked = 0;
    for (const call of calls(b, alice.csrfToken)) {
      const reference = shape(
        await expectError(await call.send(unknown), 'NOT_FOUND', 404, `${call.name} with an unknown id`),
      );
      for (const id of [...bob.threadIds, bob.threadIds[0].toUpperCase()]) {
        const text = await expectError(await call.send(id), 'NOT_FOUND', 404, `${call.name} with bob's thread ${id}`);
        assert.equal(shape(text), reference, `${call.name}: bob's thread answers exactly like an unknown one`);
        for (const secret of [...bob.mail, bob.email, bob.accountId])
          assert.ok(!text.includes(secret), `${call.name}: nothing of bob's account in the answer`);
        checked += 1;
      }
    }
    assert.equal(checked, 32);
    assert.deepEqual(
      await snapshot(w),
      before,
      'no body fetched, no AI call, no analysis, draft or usage row, no session touched',
    );
  });

  it('a batch mixing an own and a foreign thread answers the own one only', async () => {
    const w = world();
    const { alice, bob } = w;
    const input = encodeURIComponent(
      JSON.stringify({ 0: { threadId: alice.threadIds[0] }, 1: { threadId: bob.threadIds[0] } }),
    );
    const res = await asUser(w, alice).fetch(`/trpc/mail.thread,mail.thread?batch=1&input=${input}`);
    const text = await res.text();
    const [own, foreign] = JSON.parse(text);
    assert.equal(own.result.data.id, alice.threadIds[0]);
    assert.equal(foreign.error.data.appCode, 'NOT_FOUND');
    for (const secret of [...bob.mail, bob.accountId]) assert.ok(!text.includes(secret), 'nothing of bob in the batch');
  });

  it("lists, settings and sync state are the caller's own, both ways", async () => {
    const w = world();
    const { alice, bob } = w;
    for (const [me, other] of [
      [alice, bob],
      [bob, alice],
    ] as const) {
      const list = await (await asUser(w, me).fetch('/api/mail/threads?limit=100')).json();
      assert.deepEqual(
        list.threads.map((th: { id: string }) => th.id).sort(),
        [...me.threadIds].sort(),
        `${me.email} lists their own threads only`,
      );
      const text = JSON.stringify(list);
      for (const secret of other.mail)
        assert.ok(!text.includes(secret), `nothing of ${other.email} in ${me.email}'s list`);
      // The other direction of the IDOR check, on the detail.
      await expectError(
        await asUser(w, me).fetch(`/api/mail/threads/${other.threadIds[1]}`),
        'NOT_FOUND',
        404,
        `${me.email} opening ${other.email}'s thread`,
      );
    }
    const headers = { 'X-CSRF-Token': alice.csrfToken, Origin: WEB_ORIGIN };
    const patched = await asUser(w, alice).fetch('/api/settings', {
      method: 'PATCH',
      headers,
      json: { signature: 'Alice only', responseStyle: { tone: 'friendly' } },
    });
    assert.equal(patched.status, 200);
    const bobs = await (await asUser(w, bob).fetch('/api/settings')).json();
    assert.equal(bobs.signature, null, "bob's settings are not alice's");
    assert.equal(bobs.responseStyle.tone, null);
  });
});
