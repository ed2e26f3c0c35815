/**
 * Issue 43 point 2: a message that fails costs itself, not the call. A backfill of an inbox
 * with a dozen failing messages spread through it keeps everything else each call fetched,
 * sets the dozen aside (retried on their own later) and never fails, backs off or
 * dead-letters a job for them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startLiveWorld, waitFor } from './live-harness.ts';

const BOB = { sub: 'user-bob', email: 'bob@example.com' };
const SIZE = 5_000;
const FAILING = 12;

describe('failing messages in a backfill', () => {
  it(`sets aside ${FAILING} failing messages of a ${SIZE}-message inbox and backfills the rest without a failed job`, async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    await w.idle();
    const seeded = w.gmail.seed(BOB.email, SIZE, { sentReplies: false });
    // Spread through the inbox: every SIZE/FAILING-th message, from the newest to the oldest pages.
    const failing = Array.from({ length: FAILING }, (_, i) => seeded[Math.floor(((i + 0.5) * SIZE) / FAILING)]!.id);
    for (const id of failing)
      w.gmail.injectFault({ endpoint: 'messages.get', status: 500, pathIncludes: id, times: Infinity });
    const started = Date.now();
    const bob = await w.signInAs(BOB);
    await waitFor(
      async () => (await w.stored(bob.accountId)).rows === SIZE - FAILING,
      'everything but the failing messages stored',
      120_000,
      200,
    );
    const tookMs = Date.now() - started;
    await w.idle(30_000);
    const aside = await w.sql<{ pmid: string }>(
      'select provider_message_id as pmid from mail_set_aside where account_id = ? order by 1',
      [bob.accountId],
    );
    // Their attempts are not asserted: retried on their own from a minute on, a slow machine's backfill may outlast that.
    assert.deepEqual(
      aside.map((x) => x.pmid),
      [...failing].sort(),
      'exactly the failing ones set aside',
    );
    const failed = w.app.logs.filter(
      (l) =>
        l.accountId === bob.accountId &&
        typeof l.msg === 'string' &&
        /mail sync (job failed|job dead-lettered|failed)/.test(l.msg),
    );
    assert.deepEqual(failed, [], 'no sync call or job failed for them');
    const [dead] = await w.sql<{ n: number }>(
      `select count(*)::int as n from pgboss.job where name = 'mail-sync-dead-letter'`,
    );
    assert.equal(dead!.n, 0, 'nothing dead-lettered');
    t.diagnostic(`backfilled ${SIZE - FAILING} messages in ${tookMs} ms`);
  });
});
