/**
 * The hot read paths' prepared statements (server/domain/prepared-sql.ts) against
 * PostgreSQL: numbered placeholders, run by name on the ORM's own pool, planned once (the
 * pool's plan cache mode) rather than on every call, with the ORM's type parsers.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MikroORM } from '@mikro-orm/postgresql';
import { openDatabase } from '../../../server/infra/database.ts';
import { preparedRunner, preparedStatement, type RunPrepared } from '../../../server/domain/prepared-sql.ts';
import { LIST_THREADS } from '../../../server/domain/mail/threads/thread.service.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';

describe('prepared statements of the hot read paths', () => {
  let db: TestDatabase;
  let orm: MikroORM;
  let run: RunPrepared;
  before(async () => {
    db = await createTestDatabase();
    orm = await openDatabase(db.url);
    run = preparedRunner(orm);
  });
  after(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('numbers the ? placeholders in order, leaving the rest of the text alone', () => {
    assert.deepEqual(preparedStatement('s', 'select ? as a, ? as b where x = ?'), {
      name: 's',
      text: 'select $1 as a, $2 as b where x = $3',
    });
    assert.equal((LIST_THREADS.text.match(/\$\d/g) ?? []).join(','), '$1,$2,$3,$4');
    assert.ok(!LIST_THREADS.text.includes('?'));
  });

  it('passes the values as parameters, never as SQL text', async () => {
    const echo = preparedStatement('mia_test_echo', 'select ?::text as v, ?::int + 1 as n');
    const hostile = "x'); drop table accounts; --";
    assert.deepEqual(await run(echo, [hostile, 41]), [{ v: hostile, n: 42 }]);
    assert.deepEqual(await run(preparedStatement('mia_test_count', 'select count(*)::int as n from accounts'), []), [
      { n: 0 },
    ]);
  });

  it('prepares each statement once per connection and reuses one generic plan, with no planning per call', async () => {
    const probe = preparedStatement('mia_test_probe', 'select ?::int * 2 as doubled');
    for (let i = 1; i <= 8; i++) assert.deepEqual(await run(probe, [i]), [{ doubled: i * 2 }]);
    // Calls one after another on an idle pool all go to the one connection it opened.
    const [stats] = await run<{ generic_plans: string; custom_plans: string; prepared: number }>(
      preparedStatement(
        'mia_test_stats',
        'select generic_plans, custom_plans, (select count(*)::int from pg_prepared_statements where name = ?) as prepared from pg_prepared_statements where name = ?',
      ),
      ['mia_test_probe', 'mia_test_probe'],
    );
    assert.ok(stats, 'the probe is a prepared statement of the connection');
    assert.equal(stats.prepared, 1);
    assert.equal(Number(stats.custom_plans), 0, 'never planned for the values of a call');
    assert.equal(Number(stats.generic_plans), 8);
  });

  it('reads through the ORM pool, with its settings and type parsers', async () => {
    const [row] = await run<{ mode: string; timeout: string; at: unknown }>(
      preparedStatement(
        'mia_test_settings',
        "select current_setting('plan_cache_mode') as mode, current_setting('statement_timeout') as timeout, ?::timestamptz as at",
      ),
      ['2026-01-02T03:04:05.678Z'],
    );
    assert.equal(row?.mode, 'force_generic_plan');
    assert.equal(row?.timeout, '10s');
    const ormRow = (
      await orm.em.getConnection().execute("select '2026-01-02T03:04:05.678Z'::timestamptz as at")
    )[0] as { at: unknown };
    assert.deepEqual(row?.at, ormRow.at);
  });
});
