/** `npm run bench -- --smoke --only freshness,burst,two,events` runs end to end (bench-smoke.helper.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertHeadings, runSmoke } from './bench-smoke.helper.ts';

describe('npm run bench -- --smoke: the live inbox', () => {
  it('measures freshness, drains the burst on the service and the floor, runs two instances, and times live events to the client', {
    timeout: 180_000,
  }, async (t) => {
    const { markdown, report } = await runSmoke(t, 'live');
    assertHeadings(markdown, [
      '## 6. Freshness',
      '## 9. Two instances',
      '## 12. Burst next to its floor',
      '## 14. Live events',
    ]);
    for (const p of report.freshness.phases) {
      assert.equal(p.visible, p.changes, `freshness ${p.name}: every change became visible`);
      assert.ok(p.cpuMs && p.historyLists > 0, `freshness ${p.name}: its cost was read`);
    }
    for (const r of report.burst.rounds)
      assert.equal(r.stored, r.changes, `burst: the ${r.target} stored every change`);
    assert.ok(report.burst.ratio > 0, 'burst: the ratio to the floor was taken');
    const two = report.twoInstances;
    assert.equal(two.stored, two.changes, 'two instances: every change stored');
    assert.equal(two.fetchedTwice, 0, 'two instances: no message fetched twice');
    const ran = (i: 0 | 1) =>
      Object.values(two.instances[i].syncJobs as Record<string, number>).reduce((a, b) => a + b, 0);
    assert.ok(ran(0) + ran(1) > 0, 'two instances: the syncs ran');
    for (const job of two.scheduled)
      assert.ok(job.periods === 0 || job.maxPerPeriod === 1, `${job.job}: once per period`);
    const live = report.liveEvents;
    assert.ok(
      live.memory.streams > 0 && live.memory.after.rss > 0 && live.memory.before.heapUsed > 0,
      'live events: memory read with and without streams',
    );
    assert.equal(live.freshness.delivered, live.freshness.changes, 'live events: every change reached its stream');
    assert.ok(
      live.freshness.threadsEvents > 0 && live.freshness.cpuMs.database >= 0,
      'live events: events counted, CPU read',
    );
  });
});
