import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createQuotaPacer } from '../../../server/providers/gmail-quota.ts';

describe('quota pacer', () => {
  it('never lets one account spend more than its quota in any moving second, and lets other accounts through meanwhile', async () => {
    const pacer = createQuotaPacer(1000); // 950 usable per second
    const spends: { at: number; units: number }[] = [];
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: 30 }, async () => {
        const answered = await pacer.take('a', 100);
        spends.push({ at: Date.now(), units: 100 });
        answered();
      }),
    );
    const elapsed = Date.now() - t0;
    for (const s of spends) {
      const inWindow = spends.filter((x) => x.at >= s.at && x.at < s.at + 1000).reduce((n, x) => n + x.units, 0);
      assert.ok(inWindow <= 1000, `${inWindow} units within a second`);
    }
    assert.ok(elapsed >= 2000, `3,000 units at ~950 a second take at least 2 s (${elapsed} ms)`);
    const other = Date.now();
    await pacer.take('b', 100);
    assert.ok(Date.now() - other < 50, 'another account has its own quota');
  });

  it('counts a spend from when its request was answered', async () => {
    const pacer = createQuotaPacer(100); // 95 usable
    const t0 = Date.now();
    const slow = await pacer.take('a', 90);
    await new Promise((r) => setTimeout(r, 300)); // the request takes 300 ms
    slow();
    await pacer.take('a', 90);
    assert.ok(Date.now() - t0 >= 1250, 'the second waits a second after the first was answered, not after it was sent');
  });

  it('charges nothing for free calls', async () => {
    const pacer = createQuotaPacer(10);
    const t0 = Date.now();
    for (let i = 0; i < 100; i++) (await pacer.take('a', 0))();
    assert.ok(Date.now() - t0 < 50);
  });
});
