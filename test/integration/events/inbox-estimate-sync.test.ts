/**
 * The backfill estimate through the real sync: a listing's first call reads the provider's
 * inbox count beside its profile call (one labels.get per listing, none per page or per
 * stream) and its `sync` events report it; a count that fails leaves the estimate unknown
 * and the sync goes on.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { ALICE, startMailApp, type MailApp } from '../mail/mail-app.ts';
import { openSse, type SseReader } from './sse-reader.ts';

const open = async (mail: MailApp, t: TestContext): Promise<SseReader> => {
  const s = await openSse(`${mail.app.url}/api/mail/events`, { Cookie: mail.browser.cookieHeader() });
  t.after(() => s.close());
  return s;
};

describe('the backfill estimate, read by the sync', () => {
  it('is read once when the listing begins and rides every sync event of the listing', {
    timeout: 60_000,
  }, async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 120, { sentReplies: false });
    const s = await open(mail, t);
    assert.deepEqual(
      (await s.next()).json.progress,
      { stored: 0, estimatedTotal: null },
      'nothing read before the first sync',
    );
    mail.gmail.resetCounters();
    await mail.drain();
    const pages = [];
    for (;;) {
      const e = await s.next((f) => f.json.type === 'sync');
      if (e.json.state !== 'backfilling') {
        assert.equal(e.json.state, 'current');
        break;
      }
      pages.push(e.json.progress);
    }
    assert.deepEqual(pages, [
      { stored: 50, estimatedTotal: 120 },
      { stored: 100, estimatedTotal: 120 },
    ]);
    assert.equal(mail.gmail.calls['labels.get'], 1, 'one count for the whole listing');
  });

  it('a count that fails leaves the estimate unknown; the sync goes on', { timeout: 60_000 }, async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 60, { sentReplies: false });
    mail.gmail.injectFault({ endpoint: 'labels.get', status: 500 });
    const s = await open(mail, t);
    await s.next();
    const first = await mail.syncOk();
    assert.deepEqual({ synced: first.messagesSynced, hasMore: first.hasMore }, { synced: 50, hasMore: true });
    assert.deepEqual((await s.next((f) => f.json.type === 'sync')).json.progress, { stored: 50, estimatedTotal: null });
    await mail.drain();
    assert.equal((await s.next((f) => f.json.type === 'sync' && f.json.state !== 'backfilling')).json.state, 'current');
  });
});
