/**
 * Security hardening, each point written as the attack it stops: an unverified address
 * cannot own an account (notifications find accounts by address); a link cannot point the
 * status page at another server; provider error texts are redacted in logs; every incident
 * write leaves an audit line; a /trpc batch cannot carry unbounded work; over https the
 * session cookie carries the __Host- prefix.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ADMIN_TOKEN, buildTestApp, sharedApp, WEB_ORIGIN } from '../../helpers/app.ts';
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts';
import { csrfHeaders, signIn, startProviders } from '../../helpers/providers.ts';
import { authWorld, consent, callback, OAUTH_FAILED_URL } from '../auth/auth-fixtures.ts';

describe('sign-in with an unverified address', () => {
  it('is refused (error=oauth_failed) and creates no account', async (t) => {
    const world = await authWorld(t);
    world.providers.identity.setCurrentUser({ sub: 'user-mallory', email: 'alice@example.com', email_verified: false });
    const browser = world.app.browser();
    const { callback: cb } = await consent(browser);
    const res = await callback(browser, cb);
    assert.equal(res.headers.get('location'), OAUTH_FAILED_URL);
    assert.equal(await world.app.accountCount(), 0);
    assert.ok(world.app.logs.some((l) => l.msg === 'oauth callback failed'));
  });
});

describe('the status page', () => {
  it('reads its own server whatever ?api= a link carries', async (t) => {
    const missing = chromiumMissing();
    if (missing) return t.skip(missing);
    const app = await buildTestApp(t);
    const browser = await launchChromium(t);
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    await page.goto(`${app.url}/status?api=http://evil.example`);
    await page.waitForFunction(() => document.getElementById('overall')?.dataset.status !== 'unknown');
    assert.ok(
      requested.some((u) => new URL(u).origin === app.url && new URL(u).pathname === '/health'),
      `its own /health: ${requested.join(', ')}`,
    );
    assert.ok(
      !requested.some((u) => new URL(u).hostname === 'evil.example'),
      `no request to the linked server: ${requested.join(', ')}`,
    );
  });
});

describe('logs of provider failures', () => {
  it('redact the values quoted in error texts', async (t) => {
    const secret = 'ya29.LEAKED-ACCESS-TOKEN';
    const world = await authWorld(
      t,
      {},
      {
        mailWatch: () => ({
          register: async () => {},
          stop: async () => {
            throw new Error(`watch stop refused token "${secret}"`);
          },
        }),
      },
    );
    const browser = world.app.browser();
    const { csrfToken } = await signIn(browser);
    assert.equal(
      (
        await browser.fetch('/auth/provider/disconnect', {
          method: 'POST',
          headers: csrfHeaders(csrfToken, WEB_ORIGIN),
        })
      ).status,
      204,
    );
    const line = world.app.logs.find((l) => l.msg === 'stopping the mail watch failed');
    assert.ok(line, 'the failure is logged');
    assert.match(String(line.errMessage), /"\[value\]"/);
    assert.ok(!JSON.stringify(world.app.logs).includes(secret));
  });

  it('no log call in server/ writes an error message past errorSummary', async () => {
    const offenders: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const e of await readdir(dir, { withFileTypes: true })) {
        const full = path.join(dir, e.name);
        if (e.isDirectory()) await walk(full);
        else if (e.name.endsWith('.ts')) {
          (await readFile(full, 'utf8')).split('\n').forEach((line, i) => {
            if (/\blog\.(warn|error|info|debug)\(/.test(line) && /\.message\b/.test(line))
              offenders.push(`${full}:${i + 1}`);
          });
        }
      }
    };
    await walk(path.resolve('server'));
    assert.deepEqual(offenders, []);
  });
});

describe('incident writes', () => {
  const app = sharedApp();
  it("leave an audit line with the credential's fingerprint, the incident and what changed, never the texts", async () => {
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' };
    const created = await fetch(`${app().url}/api/status/incidents`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({
        kind: 'incident',
        state: 'investigating',
        title: 'TITLE-TEXT-1',
        message: 'MESSAGE-TEXT-1',
        affectedComponents: ['mail'],
      }),
    });
    const { id } = await created.json();
    await fetch(`${app().url}/api/status/incidents/${id}`, {
      method: 'PATCH',
      headers: admin,
      body: JSON.stringify({ state: 'resolved', message: 'MESSAGE-TEXT-2' }),
    });
    const audit = app().logs.filter((l) => l.audit === true && l.incidentId === id);
    assert.deepEqual(
      audit.map((l) => l.action),
      ['incident.create', 'incident.update'],
    );
    assert.match(String(audit[0]!.actor), /^admin:[0-9a-f]{8}$/);
    assert.equal(audit[0]!.actor, audit[1]!.actor);
    assert.deepEqual(audit[1]!.changed, ['state', 'message']);
    const text = JSON.stringify(audit);
    for (const s of ['TITLE-TEXT-1', 'MESSAGE-TEXT', ADMIN_TOKEN])
      assert.ok(!text.includes(s), `no ${s} in the audit lines`);
  });
});

describe('/trpc batches', () => {
  const app = sharedApp();
  it('refuse more than 10 calls in one request', async () => {
    const call = (n: number) =>
      fetch(`${app().url}/trpc/${Array.from({ length: n }, () => 'system.health').join(',')}?batch=1`);
    assert.equal((await call(10)).status, 200);
    const res = await call(11);
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal((Array.isArray(body) ? body[0] : body).error.data.appCode, 'VALIDATION_FAILED');
  });
});

describe('cookies over https', () => {
  it('carry the __Host- prefix (Secure, Path=/, no Domain) and still sign a user in', async (t) => {
    const providers = await startProviders(t);
    const port = await import('../../../server/infra/database.ts').then((m) => m.freePort());
    const app = await buildTestApp(t, {
      env: {
        ...providers.env,
        PORT: String(port),
        PUBLIC_BASE_URL: `https://127.0.0.1:${port}`,
        GOOGLE_REDIRECT_URI: `http://127.0.0.1:${port}/auth/provider/callback`,
      },
    });
    const browser = app.browser();
    await signIn(browser);
    assert.ok(
      browser.cookies.has('__Host-mia_session') && browser.cookies.has('__Host-mia_session.sig'),
      [...browser.cookies.keys()].join(', '),
    );
    assert.ok(!browser.cookies.has('mia_session'));
    const res = await browser.fetch('/auth/session');
    const set = res.headers.getSetCookie().concat((await app.browser().fetch('/auth/provider')).headers.getSetCookie());
    for (const line of set.filter((l) => l.startsWith('__Host-'))) {
      assert.match(line, /;\s*secure/i);
      assert.match(line, /;\s*path=\/(;|$)/i);
      assert.doesNotMatch(line, /domain=/i);
    }
    assert.ok(
      set.some((l) => l.startsWith('__Secure-mia_oauth=')),
      'the pre-auth cookie is __Secure-',
    );
    assert.equal((await res.json()).authenticated, true);
  });
});
