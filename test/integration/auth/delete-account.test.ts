/**
 * DELETE /auth/account and /trpc auth.deleteAccount (api-spec part 4): body exactly
 * {confirm: true} or VALIDATION_FAILED; on success the watch is stopped, the grant revoked
 * and the account deleted with every row that belongs to it (checked generically over every
 * table having an account_id column), other accounts untouched; 204.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import type { Browser } from '../../../harness/browser.ts';
import { csrfHeaders, signIn } from '../../helpers/providers.ts';
import {
  accountBySub,
  authWorld,
  expectEnvelope,
  expectTrpcError,
  JSON_TYPE,
  sessionOf,
  type AuthWorld,
} from './auth-fixtures.ts';

/** The account tables this file gives rows to before deleting (sign-in fills credentials, sessions, sync_states). */
const SEEDED = [
  'ai_usage',
  'analyses',
  'analytics_events',
  'credentials',
  'drafts',
  'mail_messages',
  'mail_threads',
  'sessions',
  'sync_states',
];

/** Every table of the schema that has an account_id column, read from the catalogue. */
async function accountTables(world: AuthWorld): Promise<string[]> {
  const rows = await world.sql<{ table_name: string }>(
    `select c.table_name from information_schema.columns c join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = current_schema() and c.column_name = 'account_id' and t.table_type = 'BASE TABLE' order by 1`,
  );
  return rows.map((r) => r.table_name);
}

async function countsFor(world: AuthWorld, accountId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of await accountTables(world)) {
    const [row] = await world.sql<{ n: string }>(`select count(*) as n from "${table}" where account_id = $1`, [
      accountId,
    ]);
    out[table] = Number(row.n);
  }
  return out;
}

/** Gives the account a row in each account-owned table the mail, AI and analytics features write. */
async function seedAccountData(world: AuthWorld, browser: Browser, accountId: string, tag: string) {
  const [thread] = await world.sql<{ id: string }>(
    `insert into mail_threads (account_id, provider_thread_id, subject, in_inbox) values ($1, $2, 'Hello', true) returning id`,
    [accountId, `thread-${tag}`],
  );
  const [message] = await world.sql<{ id: string }>(
    `insert into mail_messages (account_id, thread_id, provider_message_id, sent_at, in_inbox) values ($1, $2, $3, now(), true) returning id`,
    [accountId, thread.id, `msg-${tag}`],
  );
  await world.sql(
    `insert into analyses (account_id, thread_id, message_id, priority, reply_status, confidence, reason, suggested_action, model)
     values ($1, $2, $3, 'NORMAL', 'NO_REPLY_NEEDED', 0.5, 'r', 's', 'm')`,
    [accountId, thread.id, message.id],
  );
  await world.sql(
    `insert into drafts (account_id, thread_id, message_id, subject, body, language, options, model) values ($1, $2, $3, 'Re: Hello', 'Hi', 'en', '{}', 'm')`,
    [accountId, thread.id, message.id],
  );
  await world.sql(
    `insert into ai_usage (account_id, operation, model, state, tokens) values ($1, 'analyze', 'm', 'settled', 10)`,
    [accountId],
  );
  const event = await browser.fetch('/api/analytics/event', { method: 'POST', json: { event: 'sync_clicked' } });
  assert.equal(event.status, 200);
}

async function deleteRest(
  browser: Browser,
  csrfToken: string,
  init: { json?: unknown; body?: string; headers?: Record<string, string> } = {},
) {
  return browser.fetch('/auth/account', {
    method: 'DELETE',
    ...init,
    headers: { ...csrfHeaders(csrfToken, WEB_ORIGIN), ...init.headers },
  });
}

async function deleteTrpc(browser: Browser, csrfToken: string, init: { json?: unknown; body?: string } = {}) {
  return browser.fetch('/trpc/auth.deleteAccount', {
    method: 'POST',
    ...init,
    headers: { ...csrfHeaders(csrfToken, WEB_ORIGIN), ...JSON_TYPE },
  });
}

async function assertNothingDeleted(world: AuthWorld, browser: Browser, why: string) {
  assert.ok(await accountBySub(world, 'user-alice'), `${why}: account kept`);
  assert.equal(world.providers.identity.grants('user-alice').length, 1, `${why}: grant kept`);
  assert.equal((await sessionOf(browser)).authenticated, true, `${why}: session kept`);
}

describe('DELETE /auth/account: the body must be exactly {confirm: true}', () => {
  it('REST refuses every other body with VALIDATION_FAILED naming the field, deleting nothing', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const cases: [string, Parameters<typeof deleteRest>[2], string | null, string?][] = [
      ['missing body', {}, ''],
      ['empty object', { json: {} }, 'confirm'],
      ['confirm false', { json: { confirm: false } }, 'confirm'],
      ["confirm 'true'", { json: { confirm: 'true' } }, 'confirm'],
      ['confirm 1', { json: { confirm: 1 } }, 'confirm'],
      ['confirm null', { json: { confirm: null } }, 'confirm'],
      ['extra key', { json: { confirm: true, andBackups: true } }, 'andBackups'],
      ['array', { json: [{ confirm: true }] }, null],
      ['bare true', { json: true }, null],
      ['malformed JSON', { body: '{"confirm": true', headers: JSON_TYPE }, '', 'invalid_json'],
      [
        'not JSON',
        { body: 'confirm=true', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } },
        '',
        'unsupported_media_type',
      ],
      [
        'too large',
        { body: JSON.stringify({ confirm: true, pad: 'x'.repeat(70 * 1024) }), headers: JSON_TYPE },
        '',
        'too_big',
      ],
    ];
    for (const [why, init, path, code] of cases) {
      const res = await deleteRest(browser, csrfToken, init);
      const body = await expectEnvelope(res, 'VALIDATION_FAILED', 400);
      const issues = body.error.details?.issues ?? [];
      assert.ok(issues.length > 0, `${why}: issues listed`);
      if (path !== null)
        assert.ok(
          issues.some((i) => i.path === path && (!code || i.code === code)),
          `${why}: names ${path} ${code ?? ''} (got ${JSON.stringify(issues)})`,
        );
      await assertNothingDeleted(world, browser, why);
    }
  });

  it('/trpc refuses every other input with VALIDATION_FAILED, deleting nothing', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const cases: [string, Parameters<typeof deleteTrpc>[2]][] = [
      ['missing body', {}],
      ['confirm false', { json: { confirm: false } }],
      ["confirm 'true'", { json: { confirm: 'true' } }],
      ['confirm 1', { json: { confirm: 1 } }],
      ['extra key', { json: { confirm: true, extra: 1 } }],
      ['malformed JSON', { body: '{"confirm":' }],
    ];
    for (const [why, init] of cases) {
      const res = await deleteTrpc(browser, csrfToken, init);
      const body = await expectTrpcError(res, 'VALIDATION_FAILED', 400);
      assert.ok((body.error.data.issues ?? []).length > 0, `${why}: issues listed`);
      await assertNothingDeleted(world, browser, why);
    }
  });
});

describe('DELETE /auth/account: deletion', () => {
  it('stops the watch, revokes, and deletes the account with every row that belongs to it; other accounts untouched', async (t) => {
    const stops: { accountId: string; revokesSoFar: number }[] = [];
    const world = await authWorld(
      t,
      {},
      {
        mailWatch: ({ identity }) => ({
          register: async () => {},
          stop: async (_em, accountId) => void stops.push({ accountId, revokesSoFar: identity.calls.revoke }),
        }),
      },
    );
    const { identity } = world.providers;

    const alice = world.app.browser();
    const alicePhone = world.app.browser();
    const { csrfToken } = await signIn(alice);
    await signIn(alicePhone);
    identity.setCurrentUser({ sub: 'user-bob', email: 'bob@example.com' });
    const bob = world.app.browser();
    await signIn(bob);
    const aliceAccount = await accountBySub(world, 'user-alice');
    const bobAccount = await accountBySub(world, 'user-bob');
    await seedAccountData(world, alice, aliceAccount.id, 'a');
    await seedAccountData(world, bob, bobAccount.id, 'b');

    const tables = await accountTables(world);
    for (const expected of SEEDED) {
      assert.ok(tables.includes(expected), `${expected} is an account table`);
    }
    const aliceBefore = await countsFor(world, aliceAccount.id);
    for (const table of SEEDED) assert.ok(aliceBefore[table] > 0, `seeded ${table}`);
    const bobBefore = await countsFor(world, bobAccount.id);
    const [cred] = await world.sql<{ refresh_token_enc: string; account_id: string }>(
      'select account_id, refresh_token_enc from credentials where account_id = $1',
      [aliceAccount.id],
    );
    const storedRefresh = world.app.container.tokenCrypto.decrypt(cred.refresh_token_enc, {
      accountId: cred.account_id,
      field: 'refresh',
    });

    const res = await deleteRest(alice, csrfToken, { json: { confirm: true } });
    assert.equal(res.status, 204, await res.clone().text());
    assert.equal(await res.text(), '');
    assert.ok(
      res.headers.getSetCookie().some((c) => /^mia_session=;.*expires=Thu, 01 Jan 1970/i.test(c)),
      'the session cookie is cleared',
    );

    assert.deepEqual(stops, [{ accountId: aliceAccount.id, revokesSoFar: 0 }], 'watch stopped first');
    assert.equal(identity.calls.revoke, 1);
    // The grant the service held is revoked. (The stand-in keeps one grant per code exchange, so
    // the grant of alice's first sign-in, whose refresh token the service no longer holds, stays.)
    assert.ok(!identity.grants('user-alice').some((g) => g.refreshToken === storedRefresh), 'revoked at the provider');

    const aliceAfter = await countsFor(world, aliceAccount.id);
    for (const table of await accountTables(world))
      assert.equal(aliceAfter[table], 0, `no ${table} row left for the account`);
    assert.equal(await world.app.account({ id: aliceAccount.id }), null, 'account row gone');

    assert.deepEqual(await countsFor(world, bobAccount.id), bobBefore, "bob's rows untouched");
    assert.equal(identity.grants('user-bob').length, 1);
    assert.equal((await sessionOf(bob)).authenticated, true);
    assert.equal((await sessionOf(alice)).authenticated, false);
    assert.equal((await sessionOf(alicePhone)).authenticated, false, "alice's other browser lost its session");
  });

  it('a revocation failure at the provider still deletes everything', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const account = await accountBySub(world, 'user-alice');
    world.providers.identity.injectFault({ endpoint: 'revoke', status: 500 });
    const res = await deleteRest(browser, csrfToken, {
      json: { confirm: true },
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
    });
    assert.equal(res.status, 204);
    assert.equal(world.providers.identity.calls.revoke, 1, 'revocation attempted');
    const counts = await countsFor(world, account.id);
    for (const [table, n] of Object.entries(counts)) assert.equal(n, 0, `no ${table} row left`);
    assert.equal(await world.app.accountCount(), 0);
  });

  it('through /trpc (auth.deleteAccount with {"confirm":true})', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const account = await accountBySub(world, 'user-alice');
    const res = await deleteTrpc(browser, csrfToken, { body: '{"confirm":true}' });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(await world.app.accountCount(), 0);
    for (const [table, n] of Object.entries(await countsFor(world, account.id)))
      assert.equal(n, 0, `no ${table} row left`);
    assert.deepEqual(world.providers.identity.grants(), []);
    assert.equal((await sessionOf(browser)).authenticated, false);
  });

  it('signing in after deletion creates a new, empty account', async (t) => {
    const world = await authWorld(t);
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    const old = await accountBySub(world, 'user-alice');
    assert.equal((await deleteRest(browser, csrfToken, { json: { confirm: true } })).status, 204);
    await signIn(browser);
    const fresh = await accountBySub(world, 'user-alice');
    assert.notEqual(fresh.id, old.id);
    assert.equal(fresh.needsReconnect, false);
  });
});
