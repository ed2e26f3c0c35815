/**
 * Secrets and data: no secret in a log line, an error body or an answer that does not hand
 * it out on purpose, and none stored in the clear.
 *
 * One heavy end-to-end run through the real routes (two users sign in, sync, open threads,
 * analyze, draft, change settings, send events, get tokens refreshed, hit provider faults,
 * fail OAuth callbacks, disconnect, delete an account) collects every secret the run
 * handled: tokens and codes from the identity stand-in's grants and token requests, the
 * access tokens the service stored, every cookie value it set, the CSRF tokens,
 * SESSION_SECRET, TOKEN_ENCRYPTION_KEY, the OpenAI key, the client secret, the admin
 * token and the mail bodies. None may appear in any log line of the app (in memory and in
 * its file under test-artifacts/logs), in any error body, or in any response at all
 * except where the API hands it out on purpose (a thread's bodies, the session's CSRF token).
 *
 * Then: the database holds no raw token and no session key, and the stored tokens cannot be
 * decrypted with another key; a deleted account leaves no row in any table; and a scan of
 * every test process's log file (test-artifacts/logs/*.ndjson) for the shapes of secrets.
 * That last scan reads whatever files exist when it runs (earlier files of this run, earlier
 * runs): it needs no particular order, and this file's own run is checked value by value.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createTokenCrypto } from '../../../server/domain/auth/token-crypto.ts';
import { errorSummary } from '../../../server/infra/logger.ts';
import { ADMIN_TOKEN, buildTestApp, WEB_ORIGIN, type TestApp } from '../../helpers/app.ts';
import { Browser } from '../../../harness/browser.ts';
import { csrfHeaders, startProviders, type Providers } from '../../helpers/providers.ts';
import {
  describeFindings,
  LOG_DIR,
  logFiles,
  scanLogFile,
  scanPatterns,
  scanValues,
  SECRET_PATTERNS,
  type Finding,
} from './secret-scan.ts';

const SESSION_SECRET = `sess-${randomBytes(24).toString('base64url')}`;
const TOKEN_KEY = randomBytes(32);
const ALICE = { sub: 'user-alice', email: 'alice@example.com' };
const BOB = { sub: 'user-bob', email: 'bob@example.com' };
/** Ahead of the distinctive part of each body, so that the list's snippet (its first ~100 characters) stays clear of it. */
const FILLER = 'Thank you for your message. '.repeat(8);

interface Seen {
  url: string;
  status: number;
  headers: Headers;
  text: string;
}

/** A browser that keeps every response it received. */
class RecordingBrowser extends Browser {
  private readonly seen: Seen[];
  constructor(baseUrl: string, seen: Seen[]) {
    super(baseUrl, WEB_ORIGIN);
    this.seen = seen;
  }
  override async fetch(pathOrUrl: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
    const res = await super.fetch(pathOrUrl, init);
    this.seen.push({ url: pathOrUrl, status: res.status, headers: res.headers, text: await res.clone().text() });
    return res;
  }
}

interface Run {
  app: TestApp;
  providers: Providers;
  seen: Seen[];
  /** Secret value -> what it is. */
  secrets: Map<string, string>;
  /** Mail content that may appear only in a thread's own detail. */
  mailBodies: Map<string, string>;
  csrfTokens: Set<string>;
  bob: { accountId: string; email: string; sub: string };
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}

async function heavyRun(t: { after(fn: () => unknown): void }): Promise<Run> {
  const providers = await startProviders(t);
  const app = await buildTestApp(t, {
    env: {
      ...providers.env,
      SESSION_SECRET,
      TOKEN_ENCRYPTION_KEY: TOKEN_KEY.toString('base64'),
      RATE_LIMIT_MAX: '100000',
      TRUST_PROXY: 'true',
    },
  });
  const sql = async <T>(text: string, params: unknown[] = []) =>
    (await app.container.pool.query(text, params)).rows as T[];
  const seen: Seen[] = [];
  const secrets = new Map<string, string>();
  const mailBodies = new Map<string, string>();
  const csrfTokens = new Set<string>();
  const { identity, gmail, openai } = providers;
  /** Records a secret under the first name it was seen as. */
  const add = (value: string | null | undefined, what: string) => {
    if (value && !secrets.has(value)) secrets.set(value, what);
  };

  /** Access tokens are only ever handed to the service: read them back from its store. */
  const collectStoredTokens = async () => {
    for (const row of await sql<{ refresh_token_enc: string; access_token_enc: string | null; account_id: string }>(
      'select account_id, refresh_token_enc, access_token_enc from credentials',
    )) {
      add(
        app.container.tokenCrypto.decrypt(row.refresh_token_enc, { accountId: row.account_id, field: 'refresh' }),
        'stored refresh token',
      );
      if (row.access_token_enc)
        add(
          app.container.tokenCrypto.decrypt(row.access_token_enc, { accountId: row.account_id, field: 'access' }),
          'stored access token',
        );
    }
    for (const g of identity.grants()) add(g.refreshToken, 'refresh token (grant)');
  };

  const signIn = async (user: { sub: string; email: string }) => {
    identity.setCurrentUser(user);
    const browser = new RecordingBrowser(app.url, seen);
    const start = await browser.fetch('/auth/provider');
    const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const callback = consent.headers.get('location')!;
    const code = new URL(callback).searchParams.get('code');
    add(code, 'authorization code');
    add(new URL(callback).searchParams.get('state'), 'OAuth state');
    const done = await browser.fetch(callback);
    assert.equal(done.headers.get('location'), `${WEB_ORIGIN}/?connected=1`, `${user.email} signed in`);
    const session = await (await browser.fetch('/auth/session')).json();
    csrfTokens.add(session.csrfToken);
    await collectStoredTokens();
    return { browser, csrf: csrfHeaders(session.csrfToken, WEB_ORIGIN) };
  };

  // Mail with distinctive bodies in both mailboxes.
  for (const [who, n] of [
    [ALICE.email, 4],
    [BOB.email, 3],
  ] as const) {
    for (let i = 0; i < n; i++) {
      const text = `BODYTEXT-${who.split('@')[0]}-${i}-${randomBytes(9).toString('hex')}`;
      const html = `BODYHTML-${who.split('@')[0]}-${i}-${randomBytes(9).toString('hex')}`;
      mailBodies.set(text, `mail body (text) of ${who}`);
      mailBodies.set(html, `mail body (html) of ${who}`);
      gmail.addMessage(who, {
        subject: `Subject ${i}`,
        from: { name: 'Carol Sender', address: 'carol@partner.example' },
        bodyText: `Hello,\n${FILLER}\n${text}\nRegards`,
        bodyHtml: `<p>Hello,</p><p>${FILLER}</p><p>${html}</p>`,
      });
    }
  }
  openai.setResponder((_body, ctx) =>
    ctx.schemaName?.toLowerCase().includes('draft')
      ? { subject: 'Re: Subject', body: 'Thanks, will do.', language: 'English' }
      : {
          priority: 'NORMAL',
          replyStatus: 'NEEDS_REPLY',
          confidence: 0.5,
          reason: 'A question.',
          suggestedAction: 'Reply.',
        },
  );

  const alice = await signIn(ALICE);
  const bob = await signIn(BOB);

  const useMail = async (s: { browser: Browser; csrf: Record<string, string> }) => {
    const sync = await s.browser.fetch('/api/mail/sync', { method: 'POST', headers: s.csrf });
    assert.equal(sync.status, 200, await sync.clone().text());
    const list = await (await s.browser.fetch('/api/mail/threads')).json();
    assert.ok(list.threads.length >= 3);
    for (const th of list.threads) assert.equal((await s.browser.fetch(`/api/mail/threads/${th.id}`)).status, 200);
    const first = list.threads[0].id;
    assert.equal(
      (await s.browser.fetch(`/api/mail/threads/${first}/analyze`, { method: 'POST', headers: s.csrf })).status,
      200,
    );
    assert.equal(
      (
        await s.browser.fetch(`/api/mail/threads/${first}/draft`, {
          method: 'POST',
          headers: s.csrf,
          json: { tone: 'friendly' },
        })
      ).status,
      200,
    );
    assert.equal(
      (await s.browser.fetch(`/trpc/mail.thread?input=${encodeURIComponent(JSON.stringify({ threadId: first }))}`))
        .status,
      200,
    );
    assert.equal(
      (
        await s.browser.fetch('/api/settings', {
          method: 'PATCH',
          headers: s.csrf,
          json: { signature: 'Best, A.', responseStyle: { tone: 'professional' } },
        })
      ).status,
      200,
    );
    assert.equal(
      (
        await s.browser.fetch('/api/analytics/event', {
          method: 'POST',
          json: { event: 'thread_opened', properties: { threadId: first } },
        })
      ).status,
      200,
    );
    return list.threads.map((th: { id: string }) => th.id) as string[];
  };
  const aliceThreads = await useMail(alice);
  await useMail(bob);
  // Refusals: an unknown thread, a bad body, a missing CSRF token, no session.
  assert.equal(
    (
      await alice.browser.fetch('/api/mail/threads/7b0f7a4e-1111-4222-8333-444455556666/analyze', {
        method: 'POST',
        headers: alice.csrf,
      })
    ).status,
    404,
  );
  assert.equal(
    (await alice.browser.fetch('/api/settings', { method: 'PATCH', headers: alice.csrf, json: { signature: 5 } }))
      .status,
    400,
  );
  assert.equal((await alice.browser.fetch('/api/mail/sync', { method: 'POST' })).status, 403);
  assert.equal((await new RecordingBrowser(app.url, seen).fetch('/api/mail/threads')).status, 401);
  assert.equal(
    (
      await alice.browser.fetch('/trpc/mail.draft', {
        method: 'POST',
        headers: alice.csrf,
        json: { threadId: aliceThreads[0], tone: 'rude' },
      })
    ).status,
    400,
  );

  // Token refresh: every access token expires; the next provider call refreshes.
  identity.expireAccessTokens();
  gmail.addMessage(ALICE.email, { subject: 'New', bodyText: 'short' });
  assert.equal((await alice.browser.fetch('/api/mail/sync', { method: 'POST', headers: alice.csrf })).status, 200);
  await collectStoredTokens();

  // Provider faults, with upstream messages that must not reach a client.
  gmail.injectFault({ endpoint: 'messages.list', status: 500, times: 3, message: 'UPSTREAM-CANARY-gmail' });
  gmail.injectFault({ endpoint: 'history.list', status: 500, times: 3, message: 'UPSTREAM-CANARY-gmail' });
  const failedSync = await alice.browser.fetch('/api/mail/sync', { method: 'POST', headers: alice.csrf });
  assert.equal(failedSync.status, 502, await failedSync.clone().text());
  gmail.clearFaults();
  openai.injectFault({ kind: 'status', status: 500, times: 3, message: 'UPSTREAM-CANARY-openai' });
  const failedDraft = await alice.browser.fetch(`/api/mail/threads/${aliceThreads[1]}/draft`, {
    method: 'POST',
    headers: alice.csrf,
  });
  assert.equal(failedDraft.status, 502, await failedDraft.clone().text());
  openai.clearFaults();
  identity.expireAccessTokens();
  identity.injectFault({
    endpoint: 'token',
    status: 500,
    body: '{"error":"server_error","error_description":"UPSTREAM-CANARY-identity"}',
  });
  assert.ok((await alice.browser.fetch('/api/mail/sync', { method: 'POST', headers: alice.csrf })).status >= 500);
  identity.clearFaults();

  // Failed OAuth callbacks carrying a code and state in the query (never logged).
  const stranger = new RecordingBrowser(app.url, seen);
  const forgedCode = `4/0${randomBytes(30).toString('base64url')}`;
  add(forgedCode, 'authorization code (forged callback)');
  const failed = await stranger.fetch(
    `/auth/provider/callback?state=${randomBytes(16).toString('base64url')}&code=${encodeURIComponent(forgedCode)}`,
  );
  assert.equal(failed.headers.get('location'), `${WEB_ORIGIN}/?error=oauth_failed`);
  // A consent whose callback is presented by another browser (no pre-auth cookie).
  const start = await new RecordingBrowser(app.url, seen).fetch('/auth/provider');
  const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const stolen = consent.headers.get('location')!;
  add(new URL(stolen).searchParams.get('code'), 'authorization code (stolen callback)');
  add(new URL(stolen).searchParams.get('state'), 'OAuth state (stolen callback)');
  assert.equal((await stranger.fetch(stolen)).headers.get('location'), `${WEB_ORIGIN}/?error=oauth_failed`);

  // A revoked grant (TOKEN_EXPIRED), a disconnect and a sign-in again; Bob deletes his account.
  await collectStoredTokens();
  identity.revokeUser(ALICE.sub);
  identity.expireAccessTokens();
  assert.equal((await alice.browser.fetch('/api/mail/sync', { method: 'POST', headers: alice.csrf })).status, 401);
  assert.equal(
    (await alice.browser.fetch('/auth/provider/disconnect', { method: 'POST', headers: alice.csrf })).status,
    204,
  );
  const alice2 = await signIn(ALICE);
  assert.equal((await alice2.browser.fetch('/api/mail/sync', { method: 'POST', headers: alice2.csrf })).status, 200);
  await collectStoredTokens();
  const bobRow = (await app.account({ sub: BOB.sub }))!;
  const del = await bob.browser.fetch('/auth/account', {
    method: 'DELETE',
    headers: bob.csrf,
    json: { confirm: true },
  });
  assert.equal(del.status, 204, await del.clone().text());
  // An admin write, for the admin token's sake.
  assert.equal(
    (
      await new RecordingBrowser(app.url, seen).fetch('/api/status/incidents', {
        method: 'POST',
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
        json: { kind: 'incident', state: 'investigating', title: 'Slow', message: 'Looking.', affectedComponents: [] },
      })
    ).status,
    201,
  );

  // Everything the identity stand-in was sent, and every cookie the service set.
  for (const form of identity.calls.tokenRequests) {
    for (const key of ['code', 'code_verifier', 'refresh_token', 'client_secret'] as const)
      add(form[key], `token request ${key}`);
  }
  for (const s of seen) {
    for (const c of s.headers.getSetCookie()) {
      const value = c.split(';')[0].split('=').slice(1).join('=');
      if (value.length >= 8) add(value, `cookie ${c.split('=')[0]}`);
    }
  }
  for (const token of csrfTokens) add(token, 'CSRF token');
  add(SESSION_SECRET, 'SESSION_SECRET');
  add(TOKEN_KEY.toString('base64'), 'TOKEN_ENCRYPTION_KEY');
  add(TOKEN_KEY.toString('hex'), 'TOKEN_ENCRYPTION_KEY (hex)');
  add(TOKEN_KEY.toString('base64url'), 'TOKEN_ENCRYPTION_KEY (base64url)');
  add(openai.apiKey, 'OPENAI_API_KEY');
  add(identity.clientSecret, 'GOOGLE_CLIENT_SECRET');
  add(ADMIN_TOKEN, 'STATUS_ADMIN_TOKEN');
  return { app, providers, seen, secrets, mailBodies, csrfTokens, bob: { accountId: bobRow.id, ...BOB }, sql };
}

describe('secrets and data', () => {
  let run: Run;
  const cleanups: (() => unknown)[] = [];
  before(async () => {
    run = await heavyRun({ after: (fn) => cleanups.push(fn) });
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });

  it('the run handled the secrets it is checked for', () => {
    const kinds = new Set(run.secrets.values());
    for (const kind of [
      'authorization code',
      'token request code_verifier',
      'stored access token',
      'stored refresh token',
      'cookie mia_session',
      'cookie mia_session.sig',
      'cookie mia_oauth',
      'CSRF token',
    ]) {
      assert.ok(kinds.has(kind), `collected: ${kind}`);
    }
    assert.ok(
      run.providers.identity.calls.tokenRequests.some((f) => f.grant_type === 'refresh_token'),
      'tokens were refreshed during the run',
    );
    assert.ok(run.secrets.size > 30, `secrets collected: ${run.secrets.size}`);
    assert.ok(
      run.app.logs.length > 40 && run.seen.length > 40,
      `a run with plenty of log lines (${run.app.logs.length}) and responses (${run.seen.length})`,
    );
    assert.ok(
      run.app.logs.some((l) => l.level === 'warn' || l.level === 'error'),
      'failures were logged too',
    );
  });

  it('no secret and no mail body in any log line of the app, in memory or in its log file', () => {
    const everything = new Map([...run.secrets, ...run.mailBodies, ['UPSTREAM-CANARY', 'upstream provider text']]);
    // The upstream text may be logged (it is no secret); the rest may not.
    everything.delete('UPSTREAM-CANARY');
    const findings: Finding[] = [];
    for (const [i, line] of run.app.logs.entries()) {
      const text = JSON.stringify(line);
      findings.push(...scanValues(text, `log line ${i}`, everything), ...scanPatterns(text, `log line ${i}`));
    }
    assert.deepEqual(findings, [], describeFindings(findings));
    const file = readFileSync(path.join(LOG_DIR, `${process.pid}.ndjson`), 'utf8');
    assert.ok(file.split('\n').length >= run.app.logs.length, 'the log file holds every line of the run');
    const inFile = [...scanValues(file, 'log file', everything), ...scanPatterns(file, 'log file')];
    assert.deepEqual(inFile, [], describeFindings(inFile));
  });

  it('no secret, mail body or upstream text in any error body or response header', () => {
    const errors = run.seen.filter((s) => s.status >= 400);
    assert.ok(errors.length >= 8, `error responses seen: ${errors.length}`);
    const all = new Map([...run.secrets, ...run.mailBodies, ['UPSTREAM-CANARY', 'upstream provider text']]);
    const findings: Finding[] = [];
    for (const s of errors) findings.push(...scanValues(s.text, `${s.status} ${s.url}`, all));
    // Headers: the consent redirect carries its state on purpose.
    for (const [v, what] of all) if (what.startsWith('OAuth state')) all.delete(v);
    for (const s of run.seen) {
      const headers: string[] = [];
      s.headers.forEach((v, k) => {
        if (k !== 'set-cookie') headers.push(`${k}: ${v}`);
      });
      findings.push(...scanValues(headers.join('\n'), `headers of ${s.url}`, all));
    }
    assert.deepEqual(findings, [], describeFindings(findings));
  });

  it('no response carries a token, key or cookie value; mail bodies only in thread details; CSRF tokens only from /auth/session', () => {
    const findings: Finding[] = [];
    // (The OAuth state travels in the consent redirect by design.)
    const tokens = new Map(
      [...run.secrets].filter(([, what]) => what !== 'CSRF token' && !what.startsWith('OAuth state')),
    );
    for (const s of run.seen) {
      findings.push(...scanValues(s.text, `${s.status} ${s.url}`, tokens));
      const isDetail = /^\/api\/mail\/threads\/[0-9a-f-]{36}$/.test(s.url) || s.url.startsWith('/trpc/mail.thread?');
      if (!isDetail) findings.push(...scanValues(s.text, `${s.status} ${s.url}`, run.mailBodies));
      if (!s.url.startsWith('/auth/session'))
        findings.push(
          ...scanValues(s.text, `${s.status} ${s.url}`, new Map([...run.csrfTokens].map((c) => [c, 'CSRF token']))),
        );
    }
    assert.deepEqual(findings, [], describeFindings(findings));
    assert.ok(
      run.seen.some((s) => [...run.mailBodies.keys()].some((b) => s.text.includes(b))),
      'the thread details did carry the bodies (control)',
    );
  });

  it('the database holds no raw token, session key or secret; the stored tokens do not decrypt under another key', async () => {
    const tables = (
      await run.sql<{ table_name: string }>(
        `select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`,
      )
    ).map((r) => r.table_name);
    assert.ok(tables.includes('credentials') && tables.includes('sessions'));
    const notStored = new Map(
      [...run.secrets].filter(([, what]) => what !== 'CSRF token' && !what.startsWith('OAuth state')),
    );
    const findings: Finding[] = [];
    for (const table of tables) {
      for (const row of await run.sql<{ r: string }>(`select row_to_json(t)::text as r from "${table}" t`))
        findings.push(...scanValues(row.r, `table ${table}`, notStored));
    }
    assert.deepEqual(findings, [], describeFindings(findings));

    const rows = await run.sql<{
      refresh_token_enc: string;
      access_token_enc: string | null;
      key_id: string;
      account_id: string;
    }>('select account_id, refresh_token_enc, access_token_enc, key_id from credentials');
    assert.ok(rows.length >= 1, 'credentials stored');
    const right = createTokenCrypto([TOKEN_KEY]);
    for (const row of rows) {
      const fields = [
        ['refresh', row.refresh_token_enc],
        ['access', row.access_token_enc],
      ] as const;
      for (const [field, stored] of fields.filter((f): f is readonly [(typeof f)[0], string] => !!f[1])) {
        const context = { accountId: row.account_id, field };
        const plain = right.decrypt(stored, context);
        assert.ok(plain.startsWith('1//0') || plain.startsWith('ya29.'), 'the right key decrypts it (control)');
        assert.ok(
          !stored.includes(plain) &&
            !stored.includes(Buffer.from(plain).toString('base64')) &&
            !stored.includes(Buffer.from(plain).toString('hex')),
          'no plain, base64 or hex token in the ciphertext',
        );
        // Another key, whether announced under its own id or under the stored one, fails.
        assert.throws(() => createTokenCrypto([randomBytes(32)]).decrypt(stored, context));
        const [, keyId, iv, tag, ct] = stored.split('.');
        assert.equal(keyId, row.key_id);
        assert.ok(!TOKEN_KEY.toString('hex').includes(keyId) || keyId.length < 16, 'the key id is no part of the key');
        for (let attempt = 0; attempt < 3; attempt++) {
          const decipher = createDecipheriv('aes-256-gcm', randomBytes(32), Buffer.from(iv, 'base64url'));
          decipher.setAAD(Buffer.from(keyId));
          decipher.setAuthTag(Buffer.from(tag, 'base64url'));
          assert.throws(
            () => Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]),
            /authenticate/,
          );
        }
      }
    }
  });

  it('the deleted account left no row in any table: not by account_id, not by any content', async () => {
    const { bob } = run;
    const accountTables = (
      await run.sql<{ table_name: string }>(
        `select c.table_name from information_schema.columns c join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
          where c.table_schema = current_schema() and c.column_name = 'account_id' and t.table_type = 'BASE TABLE'`,
      )
    ).map((r) => r.table_name);
    // The run gave Bob rows in the tables every feature writes (checked on Alice, who is still there).
    const alice = (await run.app.account({ sub: ALICE.sub }))!;
    for (const table of [
      'credentials',
      'sessions',
      'sync_states',
      'mail_threads',
      'mail_messages',
      'analyses',
      'drafts',
      'ai_usage',
      'analytics_events',
    ]) {
      assert.ok(accountTables.includes(table), `${table} has account_id`);
      assert.ok(
        Number(
          (await run.sql<{ n: string }>(`select count(*) n from "${table}" where account_id = $1`, [alice.id]))[0].n,
        ) > 0,
        `the run wrote ${table} rows (alice)`,
      );
    }
    for (const table of accountTables) {
      const [{ n }] = await run.sql<{ n: string }>(`select count(*) n from "${table}" where account_id = $1`, [
        bob.accountId,
      ]);
      assert.equal(Number(n), 0, `no ${table} row of the deleted account`);
    }
    for (const by of [{ id: bob.accountId }, { sub: bob.sub }, { email: bob.email }])
      assert.equal(await run.app.account(by), null, `no accounts row by ${Object.keys(by)[0]}`);
    // Nor anything that names the account or holds its mail, in any table.
    const bobMail = new Map([...run.mailBodies].filter(([, what]) => what.includes(bob.email)));
    // (Not the address: other people's mail may name it.)
    const markers = new Map<string, string>([[bob.accountId, 'account id'], [bob.sub, 'sub'], ...bobMail]);
    const tables = (
      await run.sql<{ table_name: string }>(
        `select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`,
      )
    ).map((r) => r.table_name);
    const findings: Finding[] = [];
    for (const table of tables) {
      for (const row of await run.sql<{ r: string }>(`select row_to_json(t)::text as r from "${table}" t`))
        findings.push(...scanValues(row.r, `table ${table}`, markers));
    }
    assert.deepEqual(findings, [], describeFindings(findings));
  });
});

describe('error summaries in the logs', () => {
  it('drop the values a database error quotes (a failed write names the offending input)', () => {
    const pg = Object.assign(new Error('invalid input syntax for type uuid: "alice-secret-value"'), { code: '22P02' });
    const dup = new Error('insert failed', {
      cause: new Error(
        'duplicate key value violates unique constraint "x"\n - detail: Key (email)=(alice@example.com) already exists.',
      ),
    });
    const a = JSON.stringify(errorSummary(pg));
    const b = JSON.stringify(errorSummary(dup));
    assert.ok(!a.includes('alice-secret-value') && a.includes('invalid input syntax for type uuid'), a);
    assert.ok(!b.includes('alice@example.com') && b.includes('already exists'), b);
    assert.equal(errorSummary(pg).errCode, '22P02', 'the SQLSTATE stays');
  });
});

describe('the log files of every test process', () => {
  it('the scanner recognises each shape of secret (control)', () => {
    const samples = [
      '{"msg":"x","token":"ya29.a0AfH6SMBxyzxyzxyzxyz"}',
      '{"r":"1//0gAbCdEfGhIjKlMn"}',
      '{"q":"state=x&code=4%2F0AX4XfWh1234567890abcdefghij"}',
      '{"h":"Bearer abcdefghijkl"}',
      '{"cookie":"mia_session=abcdefghijklmnop"}',
      '{"cookie":"mia_oauth=abcdefghijklmnop"}',
      '{"id":"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig"}',
      '{"code_verifier":"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"}',
      '{"access_token":"opaque-token-value"}',
      '-----BEGIN RSA PRIVATE KEY-----',
      '{"msg":"stored","bodyText":"Hi Alice, the report"}',
    ];
    assert.equal(samples.length, SECRET_PATTERNS.length);
    samples.forEach((sample, i) =>
      assert.deepEqual(
        scanPatterns(sample, 'sample').map((f) => f.what),
        [SECRET_PATTERNS[i][0]],
        sample,
      ),
    );
    const file = `${JSON.stringify({ msg: 'ok' })}\n${samples[0]}\n`;
    assert.deepEqual(
      scanLogFile('f.ndjson', file).map((f) => f.where),
      ['f.ndjson:2'],
      'a file scan names the line',
    );
    // What the logger writes instead is no finding.
    assert.deepEqual(
      scanPatterns(
        '{"access_token":"[redacted]","code_verifier":"[redacted]","path":"/auth/provider/callback","msg":"Bearer token refused"}',
        'ok',
      ),
      [],
    );
  });

  it('no log line of any test app in test-artifacts/logs holds a token, code, bearer credential, cookie or mail content', () => {
    let lines = 0;
    const findings: Finding[] = [];
    for (const { file, text, lines: n } of logFiles()) {
      lines += n;
      findings.push(...scanLogFile(file, text));
    }
    assert.ok(lines > 0, 'this file wrote log lines at least');
    assert.deepEqual(
      findings,
      [],
      `${describeFindings(findings)}\n(every line of every test process's log of this run: npm test removes earlier runs')`,
    );
  });
});
