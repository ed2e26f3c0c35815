/**
 * The per-account token budget through the routes: refused with AI_BUDGET_EXCEEDED and
 * Retry-After (until the UTC day or month that was hit resets) without a provider call;
 * reset at the UTC boundary (injected clock); concurrent calls not overspending; failed
 * calls charged when the provider reported usage and released when it did not.
 */
import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AiUsage } from '../../../db/entities/index.ts';
import { seedThread, sharedAiSetup, testClock, type AiSetup } from '../../helpers/mail-fixtures.ts';

async function ledger(s: AiSetup, accountId: string) {
  return s.app.container.orm.em.fork().find(AiUsage, { account: accountId }, { orderBy: { createdAt: 'asc' } });
}

async function expectBudgetExceeded(res: Response, retryAfter: number) {
  assert.equal(res.status, 429);
  assert.equal((await res.json()).error.code, 'AI_BUDGET_EXCEEDED');
  assert.equal(res.headers.get('retry-after'), String(retryAfter));
}

describe('daily budget', () => {
  const clock = testClock(new Date('2030-03-15T22:00:00.000Z'));
  const setup = sharedAiSetup({ AI_DAILY_TOKEN_BUDGET: '1000', AI_MONTHLY_TOKEN_BUDGET: '100000' }, { now: clock.now });
  let s: AiSetup;
  beforeEach(async () => {
    s = setup();
    s.openai.reset();
    s.freshClient();
    await s.app.container.orm.em.fork().nativeDelete(AiUsage, {});
    clock.set(new Date('2030-03-15T22:00:00.000Z'));
  });

  it('refuses once used tokens reach the budget, with no provider call, until UTC midnight', async () => {
    s.openai.setUsage({ prompt_tokens: 300, completion_tokens: 200 });
    const { threadId, accountId } = await seedThread(s.app);
    assert.equal((await s.draft(threadId)).status, 200);
    assert.equal((await s.draft(threadId)).status, 200);
    assert.deepEqual(await s.app.container.services.ai.budget.usage(accountId), { day: 1000, month: 1000, auto: 0 });
    await expectBudgetExceeded(await s.draft(threadId), 7200);
    await expectBudgetExceeded(await s.analyze(threadId), 7200);
    assert.equal(s.openai.calls.chat, 2, 'no provider call once exhausted');

    clock.set(new Date('2030-03-15T23:59:59.000Z'));
    await expectBudgetExceeded(await s.draft(threadId), 1);
    clock.set(new Date('2030-03-16T00:00:00.000Z'));
    assert.equal((await s.draft(threadId)).status, 200, 'a new UTC day, a new budget');
    assert.equal(s.openai.calls.chat, 3);
    const rows = await ledger(s, accountId);
    assert.deepEqual(
      rows.map((r) => [r.state, r.tokens, r.promptTokens, r.completionTokens]),
      [
        ['settled', 500, 300, 200],
        ['settled', 500, 300, 200],
        ['settled', 500, 300, 200],
      ],
    );
    assert.ok(rows.every((r) => r.operation === 'draft' && r.model === 'gpt-4o-mini'));
  });

  it('does not let concurrent calls overspend', async () => {
    s.openai.setUsage({ prompt_tokens: 250, completion_tokens: 150 });
    const { threadId, accountId } = await seedThread(s.app);
    const release = s.openai.hold();
    const responses = Array.from({ length: 6 }, () => s.draft(threadId, { length: 'short' }));
    await s.openai.waitForPending(1);
    await new Promise((r) => setTimeout(r, 300));
    const admitted = s.openai.pending();
    // Each reservation (prompt estimate + output cap) is at least 400 tokens: at most 3 fit under 1,000.
    assert.ok(admitted >= 1 && admitted <= 3, `admitted ${admitted}`);
    const reserved = await ledger(s, accountId);
    assert.equal(reserved.length, admitted);
    assert.ok(reserved.every((r) => r.state === 'reserved'));
    release();
    const statuses = await Promise.all(responses.map(async (r) => (await r).status));
    assert.equal(statuses.filter((x) => x === 200).length, admitted);
    assert.equal(statuses.filter((x) => x === 429).length, 6 - admitted);
    assert.equal(s.openai.calls.chat, admitted);
    const rows = await ledger(s, accountId);
    assert.ok(rows.every((r) => r.state === 'settled' && r.tokens === 400));
    assert.ok(rows.length * 400 <= 1000 + 400, 'spent at most one call past the budget, as a sequential run would');
  });

  it('charges a failed call that reported usage', async () => {
    s.openai.setUsage({ prompt_tokens: 120, completion_tokens: 30 });
    const { threadId, accountId } = await seedThread(s.app);
    s.openai.injectFault({ kind: 'unparseable' });
    assert.equal((await s.analyze(threadId)).status, 502);
    s.openai.injectFault({ kind: 'schema-invalid' });
    assert.equal((await s.draft(threadId)).status, 502);
    const rows = await ledger(s, accountId);
    assert.deepEqual(
      rows.map((r) => [r.state, r.tokens]),
      [
        ['settled', 150],
        ['settled', 150],
      ],
    );
  });

  it('releases the reservation of a failed call that reported no usage', async () => {
    const { threadId, accountId } = await seedThread(s.app);
    s.openai.injectFault({ status: 500 });
    assert.equal((await s.analyze(threadId)).status, 502);
    s.openai.injectFault({ status: 429, retryAfterSeconds: 3 });
    assert.equal((await s.draft(threadId)).status, 429);
    s.openai.injectFault({ kind: 'garbage-body' });
    assert.equal((await s.draft(threadId)).status, 502);
    assert.deepEqual(await ledger(s, accountId), []);
  });
});

describe('monthly budget', () => {
  const clock = testClock(new Date('2030-12-31T12:00:00.000Z'));
  const setup = sharedAiSetup({ AI_DAILY_TOKEN_BUDGET: '800', AI_MONTHLY_TOKEN_BUDGET: '1000' }, { now: clock.now });
  let s: AiSetup;
  beforeEach(() => {
    s = setup();
    s.openai.reset();
    s.freshClient();
  });

  it('refuses until the first of the next UTC month once the month is used up', async () => {
    s.openai.setUsage({ prompt_tokens: 300, completion_tokens: 200 });
    const { threadId } = await seedThread(s.app);
    clock.set(new Date('2030-12-30T12:00:00.000Z'));
    assert.equal((await s.draft(threadId)).status, 200);
    assert.equal((await s.draft(threadId)).status, 200);
    // Day (1,000 of 800) and month (1,000 of 1,000) both hit: wait for the later reset.
    await expectBudgetExceeded(await s.draft(threadId), 36 * 3600);
    clock.set(new Date('2030-12-31T12:00:00.000Z'));
    await expectBudgetExceeded(await s.analyze(threadId), 12 * 3600);
    assert.equal(s.openai.calls.chat, 2);
    clock.set(new Date('2031-01-01T00:00:00.000Z'));
    assert.equal((await s.analyze(threadId)).status, 200, 'a new UTC month');
  });
});
