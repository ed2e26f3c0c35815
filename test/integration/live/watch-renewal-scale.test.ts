/**
 * Issue 43 point 7: watch renewal sized by the number of accounts. 100,000 connected accounts
 * whose watches were renewed evenly over the last day (the steady state), a run every 10
 * minutes on an injected clock: each run renews what fell due (about 100,000 / 144, more than
 * a constant batch of 500 would), so no watch ever gets older than a day and a period.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MikroORM } from '@mikro-orm/postgresql';
import {
  createWatchService,
  RENEW_AFTER_MS,
  RENEWAL_BATCH,
  type MailWatchApi,
} from '../../../server/domain/mail/sync/watch.service.ts';
import { openDatabase } from '../../../server/infra/database.ts';
import { createLogger } from '../../../server/infra/logger.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';

const ACCOUNTS = 100_000;
const PERIOD_MS = 10 * 60_000;
const DAY_MS = 24 * 3600_000;
const T0 = new Date('2031-05-04T00:00:00.000Z').getTime();

describe('watch renewal at 100,000 accounts', () => {
  let db: TestDatabase;
  let orm: MikroORM;
  const sql = <T>(query: string, params: unknown[] = []) =>
    orm.em.getConnection().execute(query, params) as Promise<T[]>;

  before(async () => {
    db = await createTestDatabase();
    orm = await openDatabase(db.url);
    await sql(
      `insert into accounts (sub, email) select 'scale-' || g, 'scale' || g || '@example.com' from generate_series(1, ?) g`,
      [ACCOUNTS],
    );
    await sql(
      `insert into credentials (account_id, key_id, refresh_token_enc, scope) select id, 'k', 'x', 'mail' from accounts`,
    );
    // Renewed evenly over the day before T0, each watch granted for a week.
    await sql(
      `insert into sync_states (account_id, watch_renewed_at, watch_expires_at, last_synced_at, updated_at)
       select id, ?::timestamptz - (row_number() over (order by id)) * (?::float8 / ?) * interval '1 millisecond', ?::timestamptz + interval '6 days', ?::timestamptz, ?::timestamptz from accounts`,
      [new Date(T0), DAY_MS, ACCOUNTS, new Date(T0), new Date(T0), new Date(T0)],
    );
  });

  after(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('renews what falls due each run, however many accounts: no watch over a day and a period old', {
    timeout: 120_000,
  }, async (t) => {
    let now = T0;
    let calls = 0;
    const api: MailWatchApi = {
      open: async () => ({
        async watch() {
          calls++;
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
    const late = async () =>
      (
        await sql<{ n: number }>('select count(*)::int as n from sync_states where watch_renewed_at < ?::timestamptz', [
          new Date(now - RENEW_AFTER_MS - PERIOD_MS),
        ])
      )[0]!.n;
    const perRun: number[] = [];
    // Two hours of runs: twelve.
    for (let run = 0; run < 12; run++, now += PERIOD_MS) {
      const before = calls;
      const renewal = await watch.renewDue();
      perRun.push(calls - before);
      assert.equal(renewal.failed.length, 0);
      assert.equal(await late(), 0, `run ${run}: a watch is over a day and a period old`);
    }
    const due = (ACCOUNTS * PERIOD_MS) / DAY_MS;
    // The first run renews the day's last slice and the watches exactly a day old; then a period's worth each.
    for (const n of perRun.slice(1))
      assert.ok(Math.abs(n - due) <= 2, `a run renews what fell due (${n}, about ${due.toFixed(0)})`);
    assert.ok(
      Math.min(...perRun.slice(1)) > RENEWAL_BATCH,
      'more than one batch a run: a constant batch would fall behind',
    );
    t.diagnostic(`renewals per run: ${perRun.join(', ')}`);
  });
});
