import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../helpers/app.ts';
import { signIn, startProviders } from '../../helpers/providers.ts';
import { startPubSubStandIn } from '../../../stand-ins/pubsub.stand-in.ts';

describe('live inbox smoke', () => {
  it('the inbox backfills after sign-in, and a new message reaches the thread list through its notification, without a sync call', async (t) => {
    const providers = await startProviders(t);
    const pubsub = await startPubSubStandIn({ projectId: 'test-project' });
    t.after(() => pubsub.close());
    pubsub.createTopic('mail');
    pubsub.createSubscription('mail', 'mail-sync', { ackDeadlineSeconds: 10 });
    providers.gmail.onNotification((n) =>
      pubsub.publish(n.topicName, { emailAddress: n.emailAddress, historyId: String(n.historyId) }),
    );
    providers.gmail.seed('alice@example.com', 5);
    const app = await buildTestApp(t, {
      env: {
        ...providers.env,
        PUBSUB_PROJECT_ID: 'test-project',
        PUBSUB_SUBSCRIPTION: 'mail-sync',
        PUBSUB_EMULATOR_HOST: pubsub.host,
      },
      overrides: { liveInbox: { work: true } },
    });
    const browser = app.browser();
    await signIn(browser);
    const listed = async () => (await (await browser.fetch('/api/mail/threads?limit=100')).json()).total as number;
    const threads = new Set(providers.gmail.inbox('alice@example.com').map((m) => m.threadId)).size;
    for (let i = 0; i < 100 && (await listed()) < threads; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await listed(), threads, 'the sign-in backfilled the inbox in the background');
    assert.equal(providers.gmail.watches('alice@example.com').filter((w) => w.kind === 'watch').length, 1);
    providers.gmail.addMessage('alice@example.com', { subject: 'Live one' });
    let found = false;
    for (let i = 0; i < 50 && !found; i++) {
      const list = await (await browser.fetch('/api/mail/threads?limit=100')).json();
      found = list.threads.some((th: { subject: string }) => th.subject === 'Live one');
      if (!found) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(found, 'the new message appeared through its notification and a sync job');
    assert.equal(
      app.logs.filter((l) => typeof l.path === 'string' && String(l.path).startsWith('/api/mail/sync')).length,
      0,
      'no sync route call',
    );
    assert.equal(pubsub.stats('mail-sync').available + pubsub.stats('mail-sync').leased, 0);
  });
});
