/**
 * The event log read back in id order when its ids cross a power of ten (9 → 10, 99 → 100):
 * a stream resumed from an id still in the log hears every event after it, in order, and no
 * `reset` (ordered as text, '10' came before '9': the resume saw its own id missing and reset,
 * and events replayed out of order were dropped as older than the one before them).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { Account } from '../../../db/entities/index.ts';
import { announceSync } from '../../../server/domain/events/announce.ts';
import { eventsSince } from '../../../server/domain/events/event-log.ts';
import { buildTestApp } from '../../helpers/app.ts';

describe('the event log across a power of ten of its ids', () => {
  it('resumes from 9 with 10 and 11, and from 99 with 100, in order', async (t) => {
    const app = await buildTestApp(t);
    const em = app.container.orm.em.fork();
    const account = em.create(Account, { sub: `order-${randomUUID()}`, email: `order-${randomUUID().slice(0, 8)}@example.com` });
    await em.flush();
    const sql = (q: string, params: unknown[] = []) => app.container.orm.em.fork().execute(q, params);
    for (const from of [8, 98]) {
      await sql(`select setval(pg_get_serial_sequence('mail_events', 'id'), ?)`, [from]);
      for (let i = 0; i < 3; i++) await announceSync(app.container.orm.em.fork(), account.id);
      const resumed = await eventsSince(app.container.orm.em.fork(), account.id, String(from + 1));
      assert.deepEqual(resumed, { known: true, events: [from + 2, from + 3].map((id) => ({ id: String(id), kind: 'sync', threadIds: null })) }, `resumed from ${from + 1}`);
    }
  });
});
