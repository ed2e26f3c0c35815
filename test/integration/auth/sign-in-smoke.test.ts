import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders, signIn, startProviders } from '../../helpers/providers.ts';

describe('sign-in smoke', () => {
  it('signs in, then disconnects', async (t) => {
    const providers = await startProviders(t);
    const app = await buildTestApp(t, { env: providers.env });
    const browser = app.browser();
    const { csrfToken, email, location } = await signIn(browser);
    assert.equal(location, `${WEB_ORIGIN}/?connected=1`);
    assert.equal(email, 'alice@example.com');
    assert.equal(providers.identity.grants().length, 1);
    const res = await browser.fetch('/auth/provider/disconnect', {
      method: 'POST',
      headers: csrfHeaders(csrfToken, WEB_ORIGIN),
    });
    assert.equal(res.status, 204);
    assert.equal(providers.identity.grants().length, 0);
    const after = await (await browser.fetch('/auth/session')).json();
    assert.equal(after.authenticated, false);
  });
});
