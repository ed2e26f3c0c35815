/**
 * POST /api/analytics/event (api-spec part 4 "Analytics", runtime-contract 4b): the public
 * allowlist (page_view), per-event property schemas with strict keys, unknown names accepted
 * and dropped, anonymousId kept only without a session, unknown top-level keys refused, and
 * AUTH_REQUIRED for a non-public event without a session; a page_view stored without its
 * path's query and with its referrer's origin only. REST and /trpc. The anonymous budget:
 * analytics-budget.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Browser } from '../../../harness/browser.ts';
import { signIn } from '../../helpers/providers.ts';
import {
  accountBySub,
  expectEnvelope,
  expectTrpcError,
  JSON_TYPE,
  sharedAuthWorld,
  type AuthWorld,
} from '../auth/auth-fixtures.ts';

interface EventRow {
  name: string;
  account_id: string | null;
  anonymous_id: string | null;
  properties: Record<string, unknown> | null;
}

const events = (world: AuthWorld) =>
  world.sql<EventRow>('select name, account_id, anonymous_id, properties from analytics_events order by id');
const post = (b: Browser, body: unknown) => b.fetch('/api/analytics/event', { method: 'POST', json: body });
const THREAD = '6f1c2a5e-8d4b-4c1e-9a7f-0b3d5e7f9a11';

/** Valid properties for every known event (runtime-contract 4b). */
const VALID: Record<string, Record<string, unknown> | undefined> = {
  // A referrer already reduced to its origin, as stored.
  page_view: { path: '/inbox', referrer: 'https://example.com' },
  thread_opened: { threadId: THREAD },
  analysis_requested: { threadId: THREAD },
  draft_generated: { threadId: THREAD, tone: 'friendly', length: 'short' },
  draft_copied: { threadId: THREAD },
  sync_clicked: undefined,
};

/**
 * One world for the file (51 analytics calls in all, under the route's 60 a minute per client):
 * each test starts with no analytics event stored.
 */
const sharedWorld = sharedAuthWorld();
async function freshWorld(): Promise<AuthWorld> {
  const world = sharedWorld();
  await world.sql('delete from analytics_events');
  return world;
}

async function expectOk(res: Response) {
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.deepEqual(JSON.parse(text), { ok: true });
}

async function expectIssue(res: Response, path: string, code?: string) {
  const body = await expectEnvelope(res, 'VALIDATION_FAILED', 400);
  const issues = body.error.details!.issues;
  const hit = issues.find((i) => i.path === path);
  assert.ok(hit, `an issue for ${path} (got ${JSON.stringify(issues)})`);
  if (code) assert.equal(hit.code, code, `code for ${path}`);
  return body;
}

describe('POST /api/analytics/event without a session', () => {
  it("records a public page_view, keeping anonymousId, the path without query and the referrer's origin", async () => {
    const world = await freshWorld();
    const anon = new Browser(world.app.url);
    const anonymousId = randomUUID();
    await expectOk(
      await post(anon, {
        event: 'page_view',
        properties: { path: '/inbox?code=secret#x', referrer: 'https://example.com/private/page?q=words' },
        anonymousId,
      }),
    );
    await expectOk(
      await post(anon, { event: 'page_view', properties: { path: '/settings', referrer: 'no url at all' } }),
    );
    assert.deepEqual(await events(world), [
      {
        name: 'page_view',
        account_id: null,
        anonymous_id: anonymousId,
        properties: { path: '/inbox', referrer: 'https://example.com' },
      },
      { name: 'page_view', account_id: null, anonymous_id: null, properties: { path: '/settings' } },
    ]);
    assert.equal(anon.cookies.size, 0, 'no session is created for an anonymous event');
  });

  it('refuses every non-public event with AUTH_REQUIRED, even with an anonymousId, storing nothing', async () => {
    const world = await freshWorld();
    const anon = new Browser(world.app.url);
    for (const [event, properties] of Object.entries(VALID)) {
      if (event === 'page_view') continue;
      await expectEnvelope(
        await post(anon, { event, ...(properties ? { properties } : {}), anonymousId: randomUUID() }),
        'AUTH_REQUIRED',
        401,
      );
    }
    assert.deepEqual(await events(world), []);
  });

  it('accepts and ignores unknown event names (200 {ok:true}, nothing stored), whatever their properties', async () => {
    const world = await freshWorld();
    const anon = new Browser(world.app.url);
    for (const event of ['future_event', 'toString', '__proto__', 'constructor', 'PAGE_VIEW', 'x'.repeat(64)]) {
      await expectOk(
        await post(anon, { event, properties: { anything: [1, { nested: true }] }, anonymousId: randomUUID() }),
      );
    }
    await expectOk(await post(anon, { event: 'future_event' }));
    assert.deepEqual(await events(world), []);
  });
});

describe('POST /api/analytics/event with a session', () => {
  it('records every known event for the account, ignoring anonymousId', async () => {
    const world = await freshWorld();
    const browser = world.app.browser();
    await signIn(browser);
    const account = await accountBySub(world, 'user-alice');
    for (const [event, properties] of Object.entries(VALID)) {
      await expectOk(await post(browser, { event, ...(properties ? { properties } : {}), anonymousId: randomUUID() }));
    }
    const rows = await events(world);
    assert.deepEqual(
      rows.map((r) => r.name),
      Object.keys(VALID),
    );
    for (const row of rows) {
      assert.equal(row.account_id, account.id, `${row.name}: account`);
      assert.equal(row.anonymous_id, null, `${row.name}: anonymousId not kept with a session`);
      assert.deepEqual(row.properties, VALID[row.name] ?? null, `${row.name}: properties`);
    }
  });

  it('unknown names are ignored with a session too', async () => {
    const world = await freshWorld();
    const browser = world.app.browser();
    await signIn(browser);
    await expectOk(await post(browser, { event: 'not_yet_invented', properties: { a: 1 } }));
    assert.deepEqual(await events(world), []);
  });

  it('refuses wrong property types, sizes, values and unknown property keys, naming the field under properties', async () => {
    const world = await freshWorld();
    const browser = world.app.browser();
    await signIn(browser);
    const cases: [string, unknown, string, string?][] = [
      ['page_view path number', { event: 'page_view', properties: { path: 123 } }, 'properties.path', 'invalid_type'],
      [
        'page_view path missing',
        { event: 'page_view', properties: { referrer: 'x' } },
        'properties.path',
        'invalid_type',
      ],
      ['page_view without properties', { event: 'page_view' }, 'properties.path', 'invalid_type'],
      [
        'page_view path too long',
        { event: 'page_view', properties: { path: `/${'p'.repeat(512)}` } },
        'properties.path',
        'too_big',
      ],
      [
        'page_view referrer type',
        { event: 'page_view', properties: { path: '/', referrer: false } },
        'properties.referrer',
        'invalid_type',
      ],
      [
        'page_view referrer too long',
        { event: 'page_view', properties: { path: '/', referrer: 'r'.repeat(2049) } },
        'properties.referrer',
        'too_big',
      ],
      [
        'page_view extra key',
        { event: 'page_view', properties: { path: '/', title: 'Inbox' } },
        'properties.title',
        'unrecognized_keys',
      ],
      [
        'thread_opened threadId not a uuid',
        { event: 'thread_opened', properties: { threadId: 'abc' } },
        'properties.threadId',
      ],
      ['analysis_requested threadId missing', { event: 'analysis_requested', properties: {} }, 'properties.threadId'],
      [
        'draft_generated tone',
        { event: 'draft_generated', properties: { threadId: THREAD, tone: 'rude' } },
        'properties.tone',
      ],
      [
        'draft_generated length',
        { event: 'draft_generated', properties: { threadId: THREAD, length: 'epic' } },
        'properties.length',
      ],
      [
        'draft_copied extra key',
        { event: 'draft_copied', properties: { threadId: THREAD, text: 'hello' } },
        'properties.text',
        'unrecognized_keys',
      ],
      [
        'sync_clicked extra key',
        { event: 'sync_clicked', properties: { force: true } },
        'properties.force',
        'unrecognized_keys',
      ],
    ];
    for (const [why, body, path, code] of cases) {
      const res = await post(browser, body);
      const envelope = await expectIssue(res, path, code);
      assert.ok(
        !JSON.stringify(envelope).includes('Inbox') && !JSON.stringify(envelope).includes('hello'),
        `${why}: no values echoed`,
      );
    }
    // The 512 / 2048 bounds themselves are fine.
    await expectOk(
      await post(browser, { event: 'page_view', properties: { path: 'p'.repeat(512), referrer: 'r'.repeat(2048) } }),
    );
    assert.equal((await events(world)).length, 1, 'only the valid event was stored');
  });
});

describe('POST /api/analytics/event: the body itself', () => {
  it('refuses unknown top-level keys, a bad event name, a bad anonymousId and non-object properties', async () => {
    const world = await freshWorld();
    const anon = new Browser(world.app.url);
    await expectIssue(
      await post(anon, { event: 'page_view', properties: { path: '/' }, userId: 'u1' }),
      'userId',
      'unrecognized_keys',
    );
    await expectIssue(await post(anon, { event: 'future_event', timestamp: 1 }), 'timestamp', 'unrecognized_keys');
    await expectIssue(await post(anon, { event: 'e'.repeat(65) }), 'event', 'too_big');
    await expectIssue(await post(anon, { event: 'page_view'.padEnd(65, '_') }), 'event', 'too_big');
    await expectIssue(await post(anon, { properties: { path: '/' } }), 'event');
    await expectIssue(await post(anon, { event: '' }), 'event');
    await expectIssue(await post(anon, { event: 42 }), 'event');
    await expectIssue(
      await post(anon, { event: 'page_view', properties: { path: '/' }, anonymousId: 'not-a-uuid' }),
      'anonymousId',
    );
    await expectIssue(await post(anon, { event: 'page_view', properties: ['/'] }), 'properties');
    await expectIssue(await post(anon, { event: 'page_view', properties: '/inbox' }), 'properties');
    const malformed = await anon.fetch('/api/analytics/event', {
      method: 'POST',
      headers: JSON_TYPE,
      body: '{"event":',
    });
    await expectEnvelope(malformed, 'VALIDATION_FAILED', 400);
    assert.deepEqual(await events(world), []);
  });
});

describe('analytics through /trpc (analytics.event)', () => {
  it('same rules: public page_view, AUTH_REQUIRED, ignored unknown names, named property issues', async () => {
    const world = await freshWorld();
    const anon = new Browser(world.app.url);
    const call = (b: Browser, input: unknown) => b.fetch('/trpc/analytics.event', { method: 'POST', json: input });
    const ok = await call(anon, { event: 'page_view', properties: { path: '/trpc' } });
    assert.equal(ok.status, 200);
    assert.deepEqual((await ok.json()).result.data, { ok: true });
    await expectTrpcError(await call(anon, { event: 'sync_clicked' }), 'AUTH_REQUIRED', 401);
    assert.deepEqual((await (await call(anon, { event: 'nope' })).json()).result.data, { ok: true });
    const bad = await expectTrpcError(
      await call(anon, { event: 'page_view', properties: { path: 5 } }),
      'VALIDATION_FAILED',
      400,
    );
    assert.ok(
      bad.error.data.issues?.some((i) => i.path === 'properties.path'),
      JSON.stringify(bad),
    );
    const extra = await expectTrpcError(
      await call(anon, { event: 'page_view', properties: { path: '/' }, extra: 1 }),
      'VALIDATION_FAILED',
      400,
    );
    assert.ok(extra.error.data.issues?.some((i) => i.path === 'extra'));
    assert.deepEqual(
      (await events(world)).map((e) => e.properties),
      [{ path: '/trpc' }],
    );
  });
});
