import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ApiError, createClient, isApiError } from '../../../shared/client.ts';
import { buildTestApp, WEB_ORIGIN } from '../../helpers/app.ts';
import type { Browser } from '../../../harness/browser.ts';
import { signIn, startProviders } from '../../helpers/providers.ts';

/** The client as a web app on WEB_ORIGIN uses it: the browser's cookies, its Origin. */
function clientFor(browser: Browser) {
  const calls: { url: string; headers: Headers }[] = [];
  const api = createClient({
    baseUrl: browser.baseUrl,
    headers: { Origin: WEB_ORIGIN },
    fetch: async (input, init) => {
      const url = String(input);
      calls.push({ url, headers: new Headers(init?.headers) });
      return browser.fetch(url, init as RequestInit);
    },
  });
  return { api, calls };
}

describe('the typed client package', () => {
  it('drives sign-in -> sync -> list -> analyze -> draft, with CSRF handled for the caller', async (t) => {
    const providers = await startProviders(t);
    providers.gmail.seed('alice@example.com', 30);
    const app = await buildTestApp(t, { env: providers.env });
    const browser = app.browser();
    const { api, calls } = clientFor(browser);

    assert.deepEqual((await api.auth.session.query()).authenticated, false);
    await assert.rejects(
      api.mail.sync.mutate(),
      (err) => isApiError(err, 'AUTH_REQUIRED') && err.httpStatus === 401 && err.requestId.length > 0,
    );

    await signIn(browser);
    const sync = await api.mail.sync.mutate();
    assert.equal(sync.messagesSynced, 30);
    const syncCall = calls.find((c) => c.url.includes('/trpc/mail.sync') && c.headers.has('X-CSRF-Token'));
    assert.ok(syncCall, 'the mutation carried the CSRF token it fetched itself');

    const list = await api.mail.threads.query({ limit: 5 });
    assert.equal(list.threads.length, 5);
    assert.equal(list.hasMore, true);
    const threadId = list.threads[0]!.id;
    const detail = await api.mail.thread.query({ threadId });
    assert.equal(detail.id, threadId);
    assert.ok(detail.messages.length >= 1);

    const analysis = await api.mail.analyze.mutate({ threadId });
    assert.ok(['URGENT', 'IMPORTANT', 'NORMAL', 'LOW'].includes(analysis.priority));
    const draft = await api.mail.draft.mutate({ threadId, tone: 'friendly', length: 'short' });
    assert.equal(typeof draft.draft.body, 'string');
    assert.ok(draft.draft.body.length > 0);
  });

  it('surfaces errors as ApiError with the spec code, request id and issues', async (t) => {
    const providers = await startProviders(t);
    const app = await buildTestApp(t, { env: providers.env });
    const browser = app.browser();
    const { api } = clientFor(browser);
    await signIn(browser);

    const notFound = await api.mail.thread.query({ threadId: randomUUID() }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(notFound instanceof ApiError);
    assert.equal(notFound.code, 'NOT_FOUND');
    assert.equal(notFound.httpStatus, 404);

    const invalid = await api.mail.threads.query({ limit: 500 }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(isApiError(invalid, 'VALIDATION_FAILED'));
    assert.deepEqual(
      invalid.issues.map((i) => i.path),
      ['limit'],
    );
  });

  it('fetches a fresh CSRF token after the session changed', async (t) => {
    const providers = await startProviders(t);
    providers.gmail.seed('alice@example.com', 3);
    const app = await buildTestApp(t, { env: providers.env });
    const browser = app.browser();
    const { api } = clientFor(browser);
    await signIn(browser);
    assert.equal((await api.mail.sync.mutate()).messagesSynced, 3);
    // Signing in again regenerates the session and its CSRF token: the client recovers by itself.
    await signIn(browser);
    const again = await api.mail.sync.mutate();
    assert.equal(again.hasMore, false);
  });
});
