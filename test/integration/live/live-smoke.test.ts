import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders, signIn, startProviders } from '../../helpers/providers.ts';
import { startPubSubStandIn } from '../../../stand-ins/pubsub.stand-in.ts';

describe('live inbox smoke', () => {
  it('a new message and its notification reach the thread list without a sync call', async (t) => {
    const providers = await startProviders(t);
    const pubsub = await startPubSubStandIn({ projectId: 'test-project' });
    t.after(() => pubsub.close());
    pubsub.createTopic('mail');
    pubsub.createSubscription('mail', 'mail-sync', { ackDeadlineSeconds: 10 });
    providers.gmail.onNotification((n) => pubsub.publish(n.topicName, { emailAddress: n.emailAddress, historyId: String(n.historyId) }));
    providers.gmail.seed('alice@example.com', 5);
    const app = await buildTestApp(t, {
      env: { ...providers.env, PUBSUB_PROJECT_ID: 'test-project', PUBSUB_SUBSCRIPTION: 'mail-sync', PUBSUB_EMULATOR_HOST: pubsub.host },
    });
    const browser = app.browser();
    const { csrfToken } = await signIn(browser);
    const first = await browser.fetch('/api/mail/sync', { method: 'POST', headers: csrfHeaders(csrfToken, WEB_ORIGIN) });
    assert.equal(first.status, 200);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(providers.gmail.watches('alice@example.com').filter((w) => w.kind === 'watch').length, 1);
    providers.gmail.addMessage('alice@example.com', { subject: 'Live one' });
    let found = false;
    for (let i = 0; i < 50 && !found; i++) {
      const list = await (await browser.fetch('/api/mail/threads?limit=100')).json();
      found = list.threads.some((th: { subject: string }) => th.subject === 'Live one');
      if (!found) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(found, 'the new message appeared through the poller');
    assert.equal(pubsub.stats('mail-sync').available + pubsub.stats('mail-sync').leased, 0);
  });
});
