/**
 * The event log read back in id order when its ids cross a power of ten (9 → 10, 99 → 100):
 * a stream resumed from an id still in the log hears every event after it, in order, and no
 * `reset` (ordered as text, '10' came before '9': the resume saw its own id missing and reset,
 * and events replayed out of order were dropped as older than the one before them). And the
 * log keeps its newest KEEP_PER_ACCOUNT events, however many one commit records.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { Account } from '../../../db/entities/index.ts';
import { announceCommit, announceSync, KEEP_PER_ACCOUNT } from '../../../server/domain/events/announce.ts';
import { eventsSince } from '../../../server/domain/events/event-log.ts';
import { buildTestApp } from '../../helpers/app.ts';

describe('the event log across a power of ten of its ids', () => {
  it('resumes from 9 with 10 and 11, and from 99 with 100, in order', async (t) => {
    const app = await buildTestApp(t);
    const em = app.container.orm.em.fork();
    const account = em.create(Account, {
      sub: `order-${randomUUID()}`,
      email: `order-${randomUUID().slice(0, 8)}@example.com`,
    });
    await em.flush();
    const sql = (q: string, params: unknown[] = []) => app.container.orm.em.fork().execute(q, params);
    for (const from of [8, 98]) {
      await sql(`select setval(pg_get_serial_sequence('mail_events', 'id'), ?)`, [from]);
      for (let i = 0; i < 3; i++) await announceSync(app.container.orm.em.fork(), account.id);
      const resumed = await eventsSince(app.container.orm.em.fork(), account.id, String(from + 1));
      assert.deepEqual(
        resumed,
        { known: true, events: [from + 2, from + 3].map((id) => ({ id: String(id), kind: 'sync', threadIds: null })) },
        `resumed from ${from + 1}`,
      );
    }
  });

  it(`keeps the newest ${KEEP_PER_ACCOUNT} events when each commit records two (a reset and where the account stands)`, async (t) => {
    const app = await buildTestApp(t);
    const em = app.container.orm.em.fork();
    const account = em.create(Account, {
      sub: `trim-${randomUUID()}`,
      email: `trim-${randomUUID().slice(0, 8)}@example.com`,
    });
    await em.flush();
    // A commit that deleted a message: a `reset` and a `sync`, in one statement with the trim.
    for (let i = 0; i < KEEP_PER_ACCOUNT / 2 + 20; i++)
      await app.container.orm.em.fork().transactional((tx) => announceCommit(tx, account.id, { deletes: ['gone'] }));
    const rows = (await app.container.orm.em
      .fork()
      .execute('select id::text as id from mail_events where account_id = ? order by mail_events.id', [
        account.id,
      ])) as { id: string }[];
    assert.equal(rows.length, KEEP_PER_ACCOUNT);
    const [newest] = (await app.container.orm.em
      .fork()
      .execute('select max(id)::text as id from mail_events where account_id = ?', [account.id])) as { id: string }[];
    assert.equal(rows.at(-1)!.id, newest!.id, 'the newest kept');
  });
});
