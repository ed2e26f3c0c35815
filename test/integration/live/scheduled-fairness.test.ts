/**
 * Scheduled work no account can starve: 10,000 connected accounts of which 1,000 always fail
 * (100 of them have no mailbox at the provider, which answers `failedPrecondition` forever).
 * A simulated day or more of the watch renewal and the quiet sweep, run every 10 minutes as their
 * cron does, on a real database with an injected clock: every healthy watch is renewed before
 * it is a day and one period old, every stale healthy account is swept within one period of
 * the staleness threshold, and the broken accounts are tried with a growing delay (the
 * mailbox-less ones once) instead of taking the first slots of every run.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MikroORM } from '@mikro-orm/postgresql';
import { resolveNotifiedAccount } from '../../../server/domain/mail/sync/states/index.ts';
import {
  createWatchService,
  RENEW_AFTER_MS,
  type MailWatchApi,
} from '../../../server/domain/mail/sync/watch.service.ts';
import { findAccount } from '../../../server/domain/auth/account-rows.ts';
import { openDatabase } from '../../../server/infra/database.ts';
import { createLogger } from '../../../server/infra/logger.ts';
import type { JobEngine, SyncRequest } from '../../../server/jobs/engine.ts';
import { createScheduledJobs, STALE_AFTER_MS } from '../../../server/jobs/scheduled.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';

const ACCOUNTS = 10_000;
const BROKEN = 1_000;
const NO_MAILBOX = 100;
const PERIOD_MS = 10 * 60_000;
const DAY_MS = 24 * 3600_000;
/** Accounts fair-1 to fair-1000 are the broken ones (the first 100 of them without a mailbox). */
const HEALTHY = `substr(a.sub, 6)::int > ${BROKEN}`;
const T0 = new Date('2031-03-02T00:00:00.000Z').getTime();

/** A uuid[] parameter as PostgreSQL's array literal (the ORM would spread a JS array into a list). */
const pgArray = (ids: Iterable<string>) => `{${[...ids].join(',')}}`;

const providerError = (status: number, reason: string) =>
  Object.assign(new Error(`the mail provider answered ${status}`), {
    status,
    response: { status, data: { error: { errors: [{ reason }] } } },
  });

describe('scheduled work with 1,000 broken accounts among 10,000', () => {
  let db: TestDatabase;
  let orm: MikroORM;
  const broken = new Set<string>();
  const noMailbox = new Set<string>();
  const sql = <T>(query: string, params: unknown[] = []) =>
    orm.em.getConnection().execute(query, params) as Promise<T[]>;

  before(async () => {
    db = await createTestDatabase();
    orm = await openDatabase(db.url);
    const rows = await sql<{ id: string; n: number }>(
      `insert into accounts (sub, email) select 'fair-' || g, 'fair' || g || '@example.com' from generate_series(1, ?) g returning id, substr(sub, 6)::int as n`,
      [ACCOUNTS],
    );
    for (const { id, n } of rows) {
      if (n <= BROKEN) broken.add(id);
      if (n <= NO_MAILBOX) noMailbox.add(id);
    }
    await sql(
      `insert into credentials (account_id, key_id, refresh_token_enc, scope) select id, 'k', 'x', 'mail' from accounts`,
    );
    // Every account last synced and heard of 7 hours before the first run: all stale.
    await sql(
      `insert into sync_states (account_id, last_synced_at, last_notification_at, updated_at) select id, ?::timestamptz, ?::timestamptz, ?::timestamptz from accounts`,
      [new Date(T0 - 7 * 3600_000), new Date(T0 - 7 * 3600_000), new Date(T0 - 7 * 3600_000)],
    );
  });

  after(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('renews every healthy watch within a day and one period, and tries broken ones with a growing delay', {
    timeout: 120_000,
  }, async () => {
    let now = T0;
    const attempts = new Map<string, number>();
    const api: MailWatchApi = {
      open: async (accountId) => ({
        async watch() {
          attempts.set(accountId, (attempts.get(accountId) ?? 0) + 1);
          if (noMailbox.has(accountId)) throw providerError(400, 'failedPrecondition');
          if (broken.has(accountId)) throw providerError(500, 'backendError');
          return { expiration: new Date(now + 7 * DAY_MS) };
        },
        async stop() {},
      }),
    };
    const watch = createWatchService({
      orm,
      api,
      topic: 'projects/p/topics/t',
      log: createLogger({ level: 'silent' }),
      clock: () => new Date(now),
    });
    const healthyLate = () =>
      sql<{ n: number }>(
        `select count(*)::int as n from sync_states s join accounts a on a.id = s.account_id
          where ${HEALTHY} and (s.watch_renewed_at is null or s.watch_renewed_at < ?::timestamptz or s.watch_expires_at < ?::timestamptz)`,
        [new Date(now - RENEW_AFTER_MS - PERIOD_MS), new Date(now)],
      ).then((r) => r[0]!.n);

    // A day and six hours: every healthy watch is renewed a second time.
    for (; now < T0 + DAY_MS + 6 * 3600_000; now += PERIOD_MS) {
      await watch.renewDue();
      // The first runs renew the 9,000 never-watched healthy accounts 500 at a time.
      if (now >= T0 + 4 * 3600_000)
        assert.equal(
          await healthyLate(),
          0,
          `at +${(now - T0) / 60_000} min: a healthy watch is over a day and a period old, or lapsed`,
        );
    }
    const healthyAttempts = [...attempts].filter(([id]) => !broken.has(id)).map(([, n]) => n);
    assert.equal(healthyAttempts.length, ACCOUNTS - BROKEN, 'every healthy watch was registered');
    assert.ok(
      Math.min(...healthyAttempts) === 2 && Math.max(...healthyAttempts) === 2,
      'a healthy watch is renewed once a day',
    );
    for (const id of noMailbox)
      assert.equal(attempts.get(id), 1, 'an account with no mailbox is tried once, then left out');
    const brokenAttempts = [...broken].filter((id) => !noMailbox.has(id)).map((id) => attempts.get(id) ?? 0);
    assert.ok(Math.min(...brokenAttempts) >= 3, 'failing accounts are still tried');
    assert.ok(
      Math.max(...brokenAttempts) <= 10,
      `failing accounts back off (at most ${Math.max(...brokenAttempts)} tries in 30 hours, not one per run)`,
    );
    const [left] = await sql<{ n: number; watches: number }>(
      'select count(*)::int as n, count(watch_expires_at)::int as watches from sync_states where no_mailbox_at is not null',
    );
    assert.deepEqual(left, { n: NO_MAILBOX, watches: 0 }, 'the mailbox-less accounts are marked, with no watch fields');
  });

  it('sweeps every stale healthy account within one period of going stale, while broken ones back off', {
    timeout: 120_000,
  }, async () => {
    let now = T0;
    const swept = new Map<string, number>();
    let queued: string[] = [];
    const engine = {
      async enqueueSync(req: SyncRequest) {
        queued.push(req.accountId);
        return true;
      },
    } as unknown as JobEngine;
    const jobs = createScheduledJobs({
      orm,
      engine,
      watch: { renewDue: async () => ({ renewed: 0, failed: [], resumed: [] }) },
      purge: async () => ({ sessions: 0, oauthStates: 0 }),
      log: createLogger({ level: 'silent' }),
      clock: () => new Date(now),
    });
    // The watch fields are the other job's: here only staleness counts. The mailbox-less are known as such.
    await sql(
      'update sync_states set watch_expires_at = null, no_mailbox_at = case when account_id = any(?::uuid[]) then ?::timestamptz end',
      [pgArray(noMailbox), new Date(T0)],
    );
    const healthyStale = () =>
      sql<{ n: number }>(
        `select count(*)::int as n from sync_states s join accounts a on a.id = s.account_id
          where ${HEALTHY} and s.last_synced_at < ?::timestamptz`,
        [new Date(now - STALE_AFTER_MS - 2 * PERIOD_MS)],
      ).then((r) => r[0]!.n);

    // Fourteen hours: every healthy account goes quiet and is swept three times.
    for (; now < T0 + 14 * 3600_000; now += PERIOD_MS) {
      queued = [];
      await jobs.handlers['quiet-sweep']();
      for (const id of queued) swept.set(id, (swept.get(id) ?? 0) + 1);
      // The queued jobs run: healthy accounts sync, broken ones fail.
      const ok = queued.filter((id) => !broken.has(id));
      const failed = queued.filter((id) => broken.has(id));
      await sql('update sync_states set last_synced_at = ?::timestamptz where account_id = any(?::uuid[])', [
        new Date(now),
        pgArray(ok),
      ]);
      await sql(
        'update sync_states set failing_since = coalesce(failing_since, ?::timestamptz) where account_id = any(?::uuid[])',
        [new Date(now), pgArray(failed)],
      );
      // The first runs work through the 10,000 accounts stale at the start, 1,000 a run.
      if (now >= T0 + 2 * 3600_000)
        assert.equal(
          await healthyStale(),
          0,
          `at +${(now - T0) / 60_000} min: a healthy account stale for over ${STALE_AFTER_MS / 3600_000} h and two periods`,
        );
    }
    const healthySweeps = [...swept].filter(([id]) => !broken.has(id)).map(([, n]) => n);
    assert.equal(healthySweeps.length, ACCOUNTS - BROKEN, 'every healthy account was swept');
    assert.ok(Math.min(...healthySweeps) >= 3, 'healthy accounts are swept again each time they go quiet');
    const brokenSweeps = [...broken].filter((id) => !noMailbox.has(id)).map((id) => swept.get(id) ?? 0);
    assert.ok(Math.min(...brokenSweeps) >= 3, 'failing accounts are still swept');
    assert.ok(
      Math.max(...brokenSweeps) <= 10,
      `failing accounts back off (at most ${Math.max(...brokenSweeps)} sweeps in 14 hours, not one per run)`,
    );
    for (const id of noMailbox) assert.equal(swept.get(id), undefined, 'an account with no mailbox is not swept');
  });

  it("matches a notification on the mailbox's provider address, with the sign-in email as a fallback", async () => {
    const db = orm.em.getConnection();
    const [one, two] = await Promise.all(['fair-2001', 'fair-2002'].map((sub) => findAccount(orm.em.fork(), { sub })));
    assert.equal(
      (await resolveNotifiedAccount(db, 'FAIR2001@example.com'))?.id,
      one!.id,
      'not listed yet: the sign-in email, in any case',
    );
    // What the first listing's commit records from the provider's profile.
    await sql("update sync_states set mailbox_address = 'Work.Mailbox@example.org' where account_id = ?", [one!.id]);
    assert.equal(
      (await resolveNotifiedAccount(db, 'work.mailbox@example.org'))?.id,
      one!.id,
      'the address the provider gave the mailbox',
    );
    assert.equal(
      await resolveNotifiedAccount(db, 'fair2001@example.com'),
      null,
      'once the provider named the mailbox, the sign-in email no longer does',
    );
    // Another account signed in with the address this mailbox has: the mailbox's own address wins.
    await sql("update accounts set email = 'work.mailbox@example.org' where id = ?", [two!.id]);
    assert.equal((await resolveNotifiedAccount(db, 'work.mailbox@example.org'))?.id, one!.id);
  });
});
