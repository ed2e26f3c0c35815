/**
 * Rows that only grew (issue 43, point 7): the event log of a disconnected account and the ids of
 * a listing it was in the middle of are purged by the scheduled purge; a listing under way keeps
 * its ids, and a connected account its log.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { purgeExpired } from '../../../server/domain/auth/purge-expired.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders } from '../../helpers/providers.ts';
import { ALICE, startMailApp } from './mail-app.ts';

describe('purge of what only grew', () => {
  it("removes a disconnected account's event log and its abandoned listing ids; a listing under way keeps its own", async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 600, { sentReplies: false });
    assert.equal((await mail.syncOk()).hasMore, true, 'a listing under way: 50 of 600 stored, the rest listed');
    const count = async (table: string) =>
      (await mail.sql<{ n: number }>(`select count(*)::int as n from ${table}`))[0]!.n;
    assert.equal(await count('mail_listing'), 500, 'one page of ids listed');
    assert.ok((await count('mail_events')) > 0);
    const purge = () => purgeExpired(mail.app.container.orm.em.fork());

    const kept = await purge();
    assert.deepEqual(
      [kept.mailEvents, kept.mailListing],
      [0, 0],
      'a connected account under way keeps its log and its listing',
    );

    const res = await mail.browser.fetch('/auth/provider/disconnect', {
      method: 'POST',
      headers: csrfHeaders(mail.csrfToken, WEB_ORIGIN),
    });
    assert.ok(res.status < 300, `disconnect answered ${res.status}`);
    const events = await count('mail_events');
    const ids = await count('mail_listing');
    const purged = await purge();
    assert.deepEqual([purged.mailEvents, purged.mailListing], [events, ids]);
    assert.deepEqual([await count('mail_events'), await count('mail_listing')], [0, 0]);
  });
});
