/**
 * A backfill's estimated total: the provider's inbox count (labels/INBOX through the real
 * client against the stand-in), read once when a listing begins and kept with the sync
 * state, reaches the `sync` events of the stream; a count that fails or hangs leaves it
 * unknown and never throws.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createGmailFactory } from '../../../server/providers/gmail.ts';
import { readInboxEstimate } from '../../../server/domain/mail/sync/states/index.ts';
import { ALICE, startMailApp, type MailApp } from '../mail/mail-app.ts';
import { openSse, type SseReader } from './sse-reader.ts';

/** Reads the count as a listing's start does, and stores it as its commit would (the estimate the events report). */
async function recordInboxEstimate(
  em: MailApp['app']['container']['orm']['em'],
  accountId: string,
  api: Parameters<typeof readInboxEstimate>[0],
  waitMs?: number,
) {
  const estimate = await readInboxEstimate(api, waitMs);
  await em.execute('update sync_states set inbox_estimate = ? where account_id = ?', [estimate, accountId]);
  return estimate;
}

async function accountApi(mail: MailApp) {
  const account = await mail.app.account({ email: ALICE });
  const em = mail.app.container.orm.em.fork();
  const api = createGmailFactory({ rootUrl: mail.providers.env.GMAIL_API_URL! })(
    await mail.app.container.credentials.client(em, account!.id),
    { accountId: account!.id, purpose: 'sync' },
  );
  return { accountId: account!.id, em, api };
}

const open = async (mail: MailApp, t: TestContext): Promise<SseReader> => {
  const s = await openSse(`${mail.app.url}/api/mail/events`, { Cookie: mail.browser.cookieHeader() });
  t.after(() => s.close());
  return s;
};

describe('the backfill estimate', () => {
  it("comes from the provider's inbox count and rides the sync events of the listing", {
    timeout: 60_000,
  }, async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 120, { sentReplies: false });
    const archived = mail.gmail.addMessage(ALICE, { subject: 'archived' });
    mail.gmail.archive(ALICE, archived.id);
    const { accountId, em, api } = await accountApi(mail);

    assert.equal(await api.inboxCount!(), 120, 'the real client reads labels/INBOX messagesTotal');
    assert.equal(await recordInboxEstimate(em, accountId, api), 120);
    assert.equal(mail.gmail.calls['labels.get'], 2, 'one call each');

    const s = await open(mail, t);
    assert.deepEqual((await s.next()).json.progress, { stored: 0, estimatedTotal: 120 });
    await mail.syncOk(); // the listing's first page: 50 of the 120
    const page = await s.next((e) => e.json.type === 'sync' && e.json.progress?.stored > 0);
    assert.equal(page.json.state, 'backfilling');
    assert.deepEqual(page.json.progress, { stored: 50, estimatedTotal: 120 });
    await mail.drain();
    const done = await s.next((e) => e.json.type === 'sync' && e.json.state !== 'backfilling');
    assert.equal(done.json.progress, null, 'no progress once the copy is complete');
  });

  it('stays unknown (null) when the count fails, hangs or the provider gives none; never below what is stored', {
    timeout: 60_000,
  }, async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 60, { sentReplies: false });
    const { accountId, em, api } = await accountApi(mail);
    const progress = async () => (await (await open(mail, t)).next()).json.progress;

    assert.equal(await recordInboxEstimate(em, accountId, api), 60);
    mail.gmail.injectFault({ endpoint: 'labels.get', status: 500 });
    assert.equal(await recordInboxEstimate(em, accountId, api), null, 'a provider failure');
    assert.deepEqual(await progress(), { stored: 0, estimatedTotal: null }, "the previous listing's count is not kept");

    mail.gmail.injectFault({ endpoint: 'labels.get', status: 429, reason: 'rateLimitExceeded' });
    assert.equal(await recordInboxEstimate(em, accountId, api), null, 'a quota answer');
    mail.gmail.injectFault({ endpoint: 'labels.get', status: 0, hang: true });
    assert.equal(await recordInboxEstimate(em, accountId, api, 100), null, 'a count that does not come in time');
    assert.equal(await recordInboxEstimate(em, accountId, {}), null, 'a client without the call');
    assert.equal(
      await recordInboxEstimate(em, accountId, { inboxCount: async () => null }),
      null,
      'no count in the answer',
    );

    // Mail that arrived after the count was read: the estimate is never below what is stored.
    assert.equal((await mail.syncOk()).hasMore, true, 'the first page of the listing');
    assert.equal(await recordInboxEstimate(em, accountId, { inboxCount: async () => 1 }), 1);
    assert.deepEqual(await progress(), { stored: 50, estimatedTotal: 50 });
  });
});
