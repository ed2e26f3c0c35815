/**
 * The budget ledger against PostgreSQL, without HTTP: reservations racing from two
 * "instances" (two services, one database) admit exactly what the budget allows; settle
 * and release; UTC day and month windows; other accounts unaffected.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Account, AiUsage } from '../../../db/entities/index.ts';
import { createBudgetService } from '../../../server/domain/ai/budget.service.ts';
import { AppError } from '../../../server/domain/errors.ts';
import { openDatabase } from '../../../server/infra/database.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';
import { testClock } from '../../helpers/mail-fixtures.ts';

describe('budget ledger', () => {
  let db: TestDatabase;
  let orm: MikroORM;
  let accountId: string;
  let otherId: string;
  before(async () => {
    db = await createTestDatabase();
    orm = await openDatabase(db.url);
    const em = orm.em.fork();
    const a = em.create(Account, { sub: 'ledger-a', email: 'a@example.com' });
    const b = em.create(Account, { sub: 'ledger-b', email: 'b@example.com' });
    await em.flush();
    accountId = a.id;
    otherId = b.id;
  });
  after(async () => {
    await orm?.close(true);
    await db?.drop();
  });
  const reset = () => orm.em.fork().nativeDelete(AiUsage, {});
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (err: unknown) => (err instanceof AppError ? err.code : `unexpected ${String(err)}`),
    );

  it('admits exactly what the budget allows when reservations race across instances', async () => {
    await reset();
    const clock = testClock(new Date('2030-06-10T08:00:00.000Z'));
    const limits = { daily: 1000, monthly: 1_000_000 };
    const one = createBudgetService({ orm, limits, now: clock.now });
    const two = createBudgetService({ orm, limits, now: clock.now });
    // 0, 300, 600, 900 are under 1,000: four pass; the fifth sees 1,200.
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        outcome((i % 2 ? one : two).reserve({ accountId, operation: 'analyze', model: 'm', estimate: 300 })),
      ),
    );
    assert.equal(results.filter((r) => r === 'ok').length, 4);
    assert.equal(results.filter((r) => r === 'AI_BUDGET_EXCEEDED').length, 8);
    assert.deepEqual(await one.usage(accountId), { day: 1200, month: 1200, auto: 0 });
    assert.deepEqual(await one.usage(otherId), { day: 0, month: 0, auto: 0 });
    await one.reserve({ accountId: otherId, operation: 'draft', model: 'm', estimate: 999 });
  });

  it('settles to the reported usage and releases unused reservations', async () => {
    await reset();
    const clock = testClock(new Date('2030-06-10T08:00:00.000Z'));
    const budget = createBudgetService({ orm, limits: { daily: 1000, monthly: 5000 }, now: clock.now });
    // A reservation counts like usage: in flight, it blocks the next call at the budget.
    const r1 = await budget.reserve({ accountId, operation: 'draft', model: 'm', estimate: 1000 });
    await assert.rejects(
      budget.reserve({ accountId, operation: 'draft', model: 'm', estimate: 10 }),
      (e: AppError) => e.code === 'AI_BUDGET_EXCEEDED',
    );
    await budget.release(r1);
    const r2 = await budget.reserve({ accountId, operation: 'draft', model: 'm', estimate: 900 });
    await budget.settle(r2, { promptTokens: 100, completionTokens: 50 }, 'gpt-x');
    assert.deepEqual(await budget.usage(accountId), { day: 150, month: 150, auto: 0 });
    const r3 = await budget.reserve({ accountId, operation: 'analyze', model: 'm', estimate: 700 });
    assert.deepEqual(await budget.usage(accountId), { day: 850, month: 850, auto: 0 });
    await budget.release(r3);
    await budget.release(r2); // settled rows are never released
    assert.deepEqual(await budget.usage(accountId), { day: 150, month: 150, auto: 0 });
    const [row] = await orm.em.fork().find(AiUsage, { id: r2.id });
    assert.deepEqual(
      [row.state, row.tokens, row.promptTokens, row.completionTokens, row.model],
      ['settled', 150, 100, 50, 'gpt-x'],
    );
  });

  it('counts the UTC day and month the clock is in', async () => {
    await reset();
    const clock = testClock(new Date('2030-01-31T23:30:00.000Z'));
    const budget = createBudgetService({ orm, limits: { daily: 500, monthly: 800 }, now: clock.now });
    const r = await budget.reserve({ accountId, operation: 'draft', model: 'm', estimate: 500 });
    await budget.settle(r, { promptTokens: 400, completionTokens: 100 }, 'm');
    await assert.rejects(
      budget.reserve({ accountId, operation: 'draft', model: 'm', estimate: 1 }),
      (e: AppError) => e.code === 'AI_BUDGET_EXCEEDED' && e.retryAfter === 1800,
    );
    clock.set(new Date('2030-02-01T00:00:00.000Z'));
    assert.deepEqual(await budget.usage(accountId), { day: 0, month: 0, auto: 0 });
    const r2 = await budget.reserve({ accountId, operation: 'draft', model: 'm', estimate: 1 });
    await budget.settle(r2, { promptTokens: 300, completionTokens: 500 }, 'm');
    clock.set(new Date('2030-02-02T10:00:00.000Z'));
    // Day is fresh (0 of 500) but the month is at 800 of 800: wait for 1 March.
    await assert.rejects(
      budget.reserve({ accountId, operation: 'draft', model: 'm', estimate: 1 }),
      (e: AppError) => e.code === 'AI_BUDGET_EXCEEDED' && e.retryAfter === (26 * 24 + 14) * 3600,
    );
  });
});
