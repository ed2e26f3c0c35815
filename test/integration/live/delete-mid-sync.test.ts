/**
 * Deletion and disconnect in the middle of a backfill (issue 28): the account row is the
 * first lock of every transaction writing the account's rows (the sync's commit, a thread
 * open, disconnect, deletion's cascade), so they queue instead of deadlocking. Many rounds,
 * each one a user whose backfill is running (background jobs and the user's own Sync
 * presses) when they delete their account or disconnect: every answer is the route's own
 * (never a 500), no error line says "deadlock", and the provider hears nothing more of the
 * account within seconds.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders } from '../../helpers/providers.ts';
import pg from 'pg';
import { AppError } from '../../../server/domain/errors.ts';
import { ALICE, startMailApp } from '../mail/mail-app.ts';
import { startLiveWorld, waitFor } from './live-harness.ts';
import { randomUUID } from 'node:crypto';
import { announceSync, KEEP_PER_ACCOUNT } from '../../../server/domain/events/announce.ts';
import { claimSlot } from '../../../server/domain/events/stream-slots.ts';

/** Rounds (half deletions, half disconnects) and the size of each user's inbox. */
const ROUNDS = 10;
const INBOX = 300;
/** The provider must hear the last of an account this soon after the route answered. */
const QUIET_AFTER_MS = 5_000;

describe('deletion and disconnect in the middle of a backfill', () => {
  it('deletes an account whose event log is past its trim while notifications and stream places write to it: no 500, no deadlock', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    const { orm } = w.app.container;
    for (let round = 0; round < 8; round++) {
      const user = { sub: `log-${round}`, email: `log${round}@example.com` };
      const { browser, csrfToken, accountId } = await w.signInAs(user);
      await w.idle();
      // Past the trim: every new event deletes the oldest rows, in the rows the deletion's cascade wants.
      await w.sql(`insert into mail_events (account_id, kind) select ?::uuid, 'sync' from generate_series(1, ?)`, [
        accountId,
        KEEP_PER_ACCOUNT + 20,
      ]);
      let deleting = true;
      const writers = Array.from({ length: 4 }, async (_, i) => {
        while (deleting) {
          // What the intake and the stream route write (announceSync, a stream's place); a deleted account's answers are its own.
          await (i % 2
            ? announceSync(orm.em.fork(), accountId)
            : claimSlot(
                orm.em.fork(),
                { id: randomUUID(), accountId, sessionKey: 's', instance: randomUUID() },
                { perSession: 1_000, perAccount: 1_000, ttlMs: 60_000 },
              ));
        }
      });
      const res = await browser.fetch('/auth/account', {
        method: 'DELETE',
        json: { confirm: true },
        headers: csrfHeaders(csrfToken, WEB_ORIGIN),
      });
      deleting = false;
      await Promise.all(writers);
      assert.equal(res.status, 204, `round ${round}: ${await res.text()}`);
      const [left] = await w.sql<{ n: number }>(
        'select (select count(*) from mail_events where account_id = ?) + (select count(*) from event_streams where account_id = ?) as n',
        [accountId, accountId],
      );
      assert.equal(Number(left!.n), 0, `round ${round}: nothing of the account written after its deletion`);
    }
    const bad = w.app.logs.filter(
      (l) => /deadlock/i.test(JSON.stringify(l)) || (typeof l.status === 'number' && l.status >= 500),
    );
    assert.deepEqual(bad, [], 'no deadlock and no internal error was logged');
  });

  it('never deadlocks, never answers 500, and ends the provider calls within seconds', async (t) => {
    const w = await startLiveWorld(t, { intake: false });
    w.gmail.setLatency(5); // each provider call takes a little while: commits and the deletion overlap
    for (let round = 0; round < ROUNDS; round++) {
      const user = { sub: `user-${round}`, email: `user${round}@example.com` };
      w.gmail.seed(user.email, INBOX, { sentReplies: false });
      const { browser, csrfToken, accountId } = await w.signInAs(user);
      // The backfill is under way: some pages committed, more to come.
      await waitFor(
        async () => (await w.stored(accountId)).rows >= 50 + (round % 4) * 25,
        `round ${round}: backfill under way`,
      );
      const headers = csrfHeaders(csrfToken, WEB_ORIGIN);
      // The user's own Sync presses race the background job and the deletion.
      const presses = Array.from({ length: 3 }, () => browser.fetch('/api/mail/sync', { method: 'POST', headers }));
      const deletion = round % 2 === 0;
      const res = deletion
        ? await browser.fetch('/auth/account', { method: 'DELETE', json: { confirm: true }, headers })
        : await browser.fetch('/auth/provider/disconnect', { method: 'POST', headers });
      const answered = Date.now();
      assert.equal(
        res.status,
        204,
        `round ${round}: ${deletion ? 'deletion' : 'disconnect'} answered ${res.status}: ${await res.text()}`,
      );
      for (const press of await Promise.all(presses)) {
        const body = await press.text();
        assert.ok(
          press.status < 500 || press.status === 502 || press.status === 503,
          `round ${round}: a Sync press answered ${press.status}: ${body}`,
        );
        assert.doesNotMatch(body, /INTERNAL_ERROR|deadlock/i);
      }
      await w.idle();
      const last = Math.max(0, ...w.gmail.requests.map((r) => r.at));
      assert.ok(
        last - answered <= QUIET_AFTER_MS,
        `round ${round}: provider calls went on ${last - answered} ms after the answer`,
      );
      if (deletion) {
        const [left] = await w.sql<{ n: number }>('select count(*)::int as n from mail_messages where account_id = ?', [
          accountId,
        ]);
        assert.equal(left.n, 0, `round ${round}: a commit after the deletion brought rows back`);
      }
    }
    const bad = w.app.logs.filter(
      (l) =>
        /deadlock/i.test(JSON.stringify(l)) ||
        (typeof l.status === 'number' && l.status >= 500 && l.status !== 502 && l.status !== 503),
    );
    assert.deepEqual(bad, [], 'no deadlock and no internal error was logged');
  });

  it('a sync that begins while the account is deleted answers AUTH_REQUIRED, never a foreign-key error', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 5, { sentReplies: false });
    const { id } = (await mail.app.account({ email: ALICE }))!;
    const sync = mail.app.container.services.sync;
    // The deletion holds the account row, uncommitted, while the sync asks for its lease; then commits.
    const client = new pg.Client({ connectionString: mail.app.databaseUrl });
    client.on('error', () => undefined); // the test database is dropped under it at the end
    await client.connect();
    t.after(() => client.end());
    await client.query('begin');
    await client.query('delete from accounts where id = $1', [id]);
    const during = sync.syncAccount(id).then(
      () => null,
      (err: unknown) => err,
    );
    await waitFor(
      async () =>
        (await mail.sql<{ n: number }>(`select count(*)::int as n from pg_locks where not granted`))[0]!.n > 0,
      'the sync waits for the deletion',
    );
    await client.query('commit');
    const err = await during;
    assert.ok(err instanceof AppError && err.code === 'AUTH_REQUIRED', `the sync answered ${String(err)}`);
    // And one that begins after it: the same answer, and no row of the account comes back.
    const after = await sync.syncAccount(id).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(after instanceof AppError && after.code === 'AUTH_REQUIRED', `the later sync answered ${String(after)}`);
    assert.equal(await mail.app.syncState(id), null);
  });
});
