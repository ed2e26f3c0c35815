/**
 * The quota pacer's rules on an in-memory ledger with the SQL function's semantics (a moving
 * window of grants per account): batches, lanes, waits, the daily budget on an injected clock.
 * The ledger's SQL itself, across instances, is tested in test/integration/mail/mail-quota.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../../server/domain/errors.ts';
import {
  createQuotaPacer,
  LANE_SHARE,
  QUOTA_PROFILES,
  QuotaWait,
  type QuotaLedger,
} from '../../../server/providers/gmail-quota.ts';

/** The ledger of one database: grants per account in a moving window, as mail_quota_take keeps them. */
function memoryLedger() {
  const grants = new Map<string, { at: number; units: number; lane: string }[]>();
  const days = new Map<string, number>();
  const calls = { take: 0, record: 0 };
  const ledger: QuotaLedger = {
    async take({ accountId, lane, want, min, cap: share, windowMs, reserve }) {
      calls.take++;
      const now = Date.now();
      const log = (grants.get(accountId) ?? []).filter((g) => g.at > now - windowMs);
      grants.set(accountId, log);
      const used = log.reduce((n, g) => n + g.units, 0);
      // Bulk yields what the other lanes spent in the window past the reserve it leaves them.
      const others = log.filter((g) => g.lane !== 'bulk').reduce((n, g) => n + g.units, 0);
      const cap = lane === 'bulk' ? share - Math.max(0, others - reserve) : share;
      if (used + min <= cap || used === 0) {
        const granted = Math.max(min, Math.min(want, cap - used));
        log.push({ at: now, units: granted, lane });
        return { granted, waitMs: 0 };
      }
      let left = used;
      for (const g of log) {
        left -= g.units;
        if (left + min <= cap) return { granted: 0, waitMs: Math.max(1, g.at + windowMs - now) };
      }
      return { granted: 0, waitMs: windowMs };
    },
    async record(rows, today) {
      calls.record++;
      for (const r of rows) days.set(r.day, (days.get(r.day) ?? 0) + r.units);
      return days.get(today) ?? 0;
    },
  };
  return { ledger, calls, days };
}

const costs = QUOTA_PROFILES['2026'].costs;

describe('mail quota pacer', () => {
  it('charges the 2026 profile by default: messages.get 20, threads.get 40, history.list 2, 6,000 units a minute', () => {
    assert.equal(costs['messages.get'], 20);
    assert.equal(costs['threads.get'], 40);
    assert.equal(costs['history.list'], 2);
    assert.equal(QUOTA_PROFILES['2026'].userUnitsPerMinute, 6_000);
    assert.equal(QUOTA_PROFILES.legacy.costs['messages.get'], 5);
    assert.equal(QUOTA_PROFILES.legacy.userUnitsPerMinute, 15_000);
  });

  it('counts in the ledger the provider’s window plus the credit’s life and the arrival skew, which a setting widens', async () => {
    const windows: number[] = [];
    const { ledger } = memoryLedger();
    const seen: QuotaLedger = { ...ledger, take: (r) => (windows.push(r.windowMs), ledger.take(r)) };
    for (const skewMs of [undefined, 1_000]) {
      const pacer = createQuotaPacer(seen, {
        profile: '2026',
        dailyBudget: 1e9,
        windowMs: 2_000,
        flushMs: 60_000,
        skewMs,
      });
      await pacer.take(`skew-${skewMs}`, 'backfill', 'messages.get');
      await pacer.close();
    }
    // 2 s window: credit 100 ms (a 60th, at least 100), skew 250 ms by default (at least 250), or as set.
    assert.deepEqual(windows, [2_350, 3_100]);
  });

  it('takes one grant for a batch: 25 messages.get announced together cost one ledger statement', async () => {
    const { ledger, calls } = memoryLedger();
    const pacer = createQuotaPacer(ledger, { profile: '2026', dailyBudget: 1e9, flushMs: 60_000 });
    await Promise.all(Array.from({ length: 25 }, (_, i) => pacer.take('a', 'backfill', 'messages.get', (25 - i) * 20)));
    assert.equal(calls.take, 1, 'one grant covered the batch');
    await pacer.close();
  });

  it("keeps bulk work under its share of the window, so that the user's call finds room at once", async () => {
    const { ledger } = memoryLedger();
    const limit = 1_000;
    const pacer = createQuotaPacer(ledger, {
      profile: '2026',
      userUnits: limit,
      dailyBudget: 1e9,
      windowMs: 60_000,
      flushMs: 60_000,
    });
    let bulk = 0;
    // Bulk fills its share; the next bulk call cannot wait a window and is told how long.
    for (;;) {
      try {
        await pacer.take('a', 'backfill', 'messages.get');
        bulk += 20;
      } catch (err) {
        assert.ok(err instanceof AppError && err.code === 'MAIL_RATE_LIMITED');
        assert.ok(err.cause instanceof QuotaWait && err.cause.reason === 'window');
        assert.ok(err.retryAfter! >= 55, `an honest Retry-After (${err.retryAfter} s)`);
        break;
      }
    }
    assert.ok(bulk <= limit * LANE_SHARE.bulk, `bulk spent ${bulk} of ${limit}`);
    const t0 = Date.now();
    await pacer.take('a', 'incremental', 'history.list');
    await pacer.take('a', 'open', 'threads.get');
    assert.ok(Date.now() - t0 < 1_000, 'the notified sync and the open went ahead of the backfill');
    await pacer.take('b', 'backfill', 'messages.get');
    await pacer.close();
  });

  it("makes bulk work yield what the user spent past its reserve: the user's room grows with use", async () => {
    const { ledger } = memoryLedger();
    const pacer = createQuotaPacer(ledger, {
      profile: '2026',
      userUnits: 1_000,
      dailyBudget: 1e9,
      windowMs: 60_000,
      flushMs: 60_000,
    });
    for (let i = 0; i < 5; i++) await pacer.take('a', 'open', 'threads.get'); // the user: 200 units, 150 past the 50 bulk leaves
    let bulk = 0;
    for (;;) {
      try {
        await pacer.take('a', 'backfill', 'messages.get');
        bulk += 20;
      } catch {
        break;
      }
    }
    assert.ok(bulk <= 950 - 200 - 150, `bulk left the user's 200 and the 150 past its reserve (${bulk})`);
    for (let i = 0; i < 5; i++) await pacer.take('a', 'open', 'threads.get'); // five more opens find room at once
    await pacer.close();
  });

  it("waits for room within its lane's bound, then goes", async () => {
    const { ledger } = memoryLedger();
    const pacer = createQuotaPacer(ledger, {
      profile: '2026',
      userUnits: 100,
      dailyBudget: 1e9,
      windowMs: 50,
      flushMs: 60_000,
    });
    // 40 units each, 100 per (short) window: the third waits for the first two to leave it (plus the ledger's allowance for a credit's lifetime and the arrival, 350 ms at this window).
    for (let i = 0; i < 3; i++) await pacer.take('a', 'open', 'threads.get');
    await pacer.close();
  });

  it('at the daily budget: bulk waits for the next UTC day, everything else goes on; the next day bulk resumes', async () => {
    const { ledger, days } = memoryLedger();
    let now = new Date('2026-12-01T23:00:00Z');
    const pacer = createQuotaPacer(ledger, {
      profile: '2026',
      userUnits: 0,
      dailyBudget: 100,
      flushMs: 60_000,
      now: () => now,
    });
    for (let i = 0; i < 5; i++) await pacer.take('a', 'backfill', 'messages.get');
    await assert.rejects(pacer.take('a', 'backfill', 'messages.get'), (err: unknown) => {
      assert.ok(err instanceof AppError && err.cause instanceof QuotaWait && err.cause.reason === 'daily');
      assert.equal(err.retryAfter, 3_600, 'until the next UTC midnight');
      return true;
    });
    await assert.rejects(
      pacer.take('a', 'resync', 'messages.list'),
      (err: unknown) => err instanceof AppError && err.cause instanceof QuotaWait && err.cause.reason === 'daily',
    );
    await pacer.take('a', 'open', 'threads.get');
    await pacer.take('a', 'incremental', 'history.list');
    await pacer.take('a', 'sync', 'messages.get');
    assert.equal(await pacer.today(), 162);
    now = new Date('2026-12-02T00:00:01Z');
    await pacer.take('a', 'backfill', 'messages.get');
    assert.equal(await pacer.today(), 20);
    assert.deepEqual(
      [...days],
      [
        ['2026-12-01', 162],
        ['2026-12-02', 20],
      ],
    );
    await pacer.close();
  });

  it('with pacing off (0 units) still counts every call by method and purpose', async () => {
    const { ledger, calls } = memoryLedger();
    const spent: string[] = [];
    const pacer = createQuotaPacer(ledger, {
      profile: 'legacy',
      userUnits: 0,
      dailyBudget: 1e9,
      flushMs: 60_000,
      onSpend: (m, p, u) => spent.push(`${m}/${p}/${u}`),
    });
    await pacer.take('a', 'backfill', 'messages.get');
    await pacer.take('a', 'open', 'threads.get');
    assert.equal(calls.take, 0, 'no ledger statement');
    assert.deepEqual(spent, ['messages.get/backfill/5', 'threads.get/open/10']);
    await pacer.close();
    assert.equal(calls.record, 1, 'flushed on close');
  });
});
