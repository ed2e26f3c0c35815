/**
 * Token encryption keys rotate completely: after `npm run rotate-keys` under a new key, the
 * old key can be removed and every account still syncs. Ciphertexts of the first format are
 * read and rewritten. A ciphertext moved into another account's row (database write access)
 * does not decrypt there: that account must reconnect, and nothing answers 500.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { createTokenCrypto } from '../../../server/domain/auth/token-crypto.ts';
import { buildTestApp, testEnv, WEB_ORIGIN } from '../../helpers/app.ts';
import { Browser } from '../../../harness/browser.ts';
import { csrfHeaders, signIn, startProviders } from '../../helpers/providers.ts';

const run = promisify(execFile);
const b64 = (k: Buffer) => k.toString('base64');

/** Two signed-in accounts on an app encrypting with `key`. */
async function world(t: { after(fn: () => unknown): void }, key: Buffer) {
  const providers = await startProviders(t);
  const sessionSecret = randomBytes(33).toString('base64url');
  const env = { ...providers.env, SESSION_SECRET: sessionSecret, RATE_LIMIT_MAX: '100000' };
  const app = await buildTestApp(t, { env: { ...env, TOKEN_ENCRYPTION_KEY: b64(key) } });
  const users = [];
  for (const [sub, email] of [
    ['user-alice', 'alice@example.com'],
    ['user-bob', 'bob@example.com'],
  ] as const) {
    providers.identity.setCurrentUser({ sub, email });
    providers.gmail.seed(email, 3);
    const browser = app.browser();
    const { csrfToken } = await signIn(browser);
    users.push({ browser, csrfToken, email });
  }
  return { providers, app, env, users };
}

/** A sync through `url` with the user's session cookies. */
async function sync(url: string, user: { browser: Browser; csrfToken: string }) {
  const browser = new Browser(url, WEB_ORIGIN);
  for (const [k, v] of user.browser.cookies) browser.cookies.set(k, v);
  return browser.fetch('/api/mail/sync', { method: 'POST', headers: csrfHeaders(user.csrfToken, WEB_ORIGIN) });
}

describe('key rotation', () => {
  it('rotate-keys, then drop the old key: every account still syncs', async (t) => {
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const w = await world(t, oldKey);
    for (const u of w.users) assert.equal((await sync(w.app.url, u)).status, 200);

    const { stdout } = await run(process.execPath, ['server/rotate-keys.ts'], {
      env: {
        ...testEnv(w.env),
        DATABASE_URL: w.app.databaseUrl,
        TOKEN_ENCRYPTION_KEY: `${b64(newKey)},${b64(oldKey)}`,
        LOG_LEVEL: 'silent',
        PATH: process.env.PATH,
      },
    });
    assert.match(stdout, /^rotated 2, already current 0, unreadable 0/);
    const rows = (
      await w.app.container.pool.query<{ key_id: string; refresh_token_enc: string; access_token_enc: string }>(
        'select key_id, refresh_token_enc, access_token_enc from credentials',
      )
    ).rows;
    const newId = createTokenCrypto([newKey]).keyId;
    for (const r of rows)
      for (const v of [r.key_id, r.refresh_token_enc.split('.')[1], r.access_token_enc.split('.')[1]])
        assert.equal(v, newId);

    await w.app.stop();
    const after = await buildTestApp(t, {
      databaseUrl: w.app.databaseUrl,
      env: { ...w.env, TOKEN_ENCRYPTION_KEY: b64(newKey) },
    });
    for (const u of w.users) {
      const res = await sync(after.url, u);
      assert.equal(res.status, 200, `${u.email} syncs with the new key alone: ${await res.clone().text()}`);
    }
  });

  it('reads tokens of the first format and rewrites them under the current one on use', async (t) => {
    const k = randomBytes(32);
    const w = await world(t, k);
    const crypto = createTokenCrypto([k]);
    const legacy = (plaintext: string) => {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', k, iv);
      c.setAAD(Buffer.from(crypto.keyId));
      const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
      return [
        'v1',
        crypto.keyId,
        iv.toString('base64url'),
        c.getAuthTag().toString('base64url'),
        ct.toString('base64url'),
      ].join('.');
    };
    const { pool } = w.app.container;
    const [row] = (
      await pool.query<{ account_id: string; refresh_token_enc: string; access_token_enc: string }>(
        `select c.* from credentials c join accounts a on a.id = c.account_id where a.email = 'alice@example.com'`,
      )
    ).rows;
    const refresh = crypto.decrypt(row!.refresh_token_enc, { accountId: row!.account_id, field: 'refresh' });
    const access = crypto.decrypt(row!.access_token_enc, { accountId: row!.account_id, field: 'access' });
    await pool.query('update credentials set refresh_token_enc = $1, access_token_enc = $2 where account_id = $3', [
      legacy(refresh),
      legacy(access),
      row!.account_id,
    ]);

    assert.equal((await sync(w.app.url, w.users[0]!)).status, 200, 'a v1 row still works');
    let upgraded = false;
    for (let i = 0; i < 50 && !upgraded; i++) {
      const [r] = (
        await pool.query<{ refresh_token_enc: string }>(
          'select refresh_token_enc from credentials where account_id = $1',
          [row!.account_id],
        )
      ).rows;
      upgraded = r!.refresh_token_enc.startsWith('v2.');
      if (!upgraded) await new Promise((res) => setTimeout(res, 20));
    }
    assert.ok(upgraded, 'rewritten as v2 after use');
  });

  it("a ciphertext moved into another account's row does not decrypt there: that account must reconnect, no 500", async (t) => {
    const w = await world(t, randomBytes(32));
    const { pool } = w.app.container;
    // The attacker (bob) copies alice's tokens into his own row.
    await pool.query(`update credentials set refresh_token_enc = v.refresh_token_enc, access_token_enc = v.access_token_enc
                        from (select c.refresh_token_enc, c.access_token_enc from credentials c join accounts a on a.id = c.account_id where a.email = 'alice@example.com') v
                       where credentials.account_id = (select id from accounts where email = 'bob@example.com')`);
    const requestsBefore = w.providers.gmail.requests.length;
    const res = await sync(w.app.url, w.users[1]!);
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, 'TOKEN_EXPIRED');
    assert.equal(
      w.providers.gmail.requests.length,
      requestsBefore,
      "nothing reached the mail provider with alice's tokens",
    );
    assert.equal((await w.app.account({ email: 'bob@example.com' }))?.needsReconnect, true);
    assert.equal((await sync(w.app.url, w.users[0]!)).status, 200, 'alice is unaffected');
  });
});
