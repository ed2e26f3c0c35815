/** `npm run bench -- --smoke --only backfill,resync,corpus` runs end to end (bench-smoke.helper.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertHeadings, runSmoke } from './bench-smoke.helper.ts';

describe('npm run bench -- --smoke: backfill and big or hostile mail', () => {
  it('backfills under the quota with mail arriving, resyncs by difference (after it and on an inbox filled unpaced), counts corpus prompts and opens hostile mail', {
    timeout: 240_000,
  }, async (t) => {
    const { markdown, report } = await runSmoke(t, 'mail');
    assertHeadings(markdown, ['## 7. Backfill', '## 7. Resync', '## 8. Mail anyone can send']);
    assert.ok(report.backfill.stored >= report.backfill.messages, 'the backfill stored the whole inbox');
    assert.ok(
      report.backfill.arrivals.count > 0 && report.backfill.arrivals.stored === report.backfill.arrivals.count,
      'mail that arrived during the backfill was stored',
    );
    assert.ok(
      report.backfill.resync.units > 0 && report.backfill.resync.share < 1,
      'the resync after the history expired spent fewer units than fetching every message',
    );
    assert.ok(report.backfill.resync.check.equal, "after that resync the stored inbox is the provider's");
    assert.equal(report.backfill.refused, 0, 'no call refused by the provider quota');
    const b = report.backfill;
    assert.equal(b.quota.profile, '2026');
    assert.ok(
      b.quotaPeak > 0 && b.quotaPeak <= b.quota.unitsPerWindow,
      `at most the limit in any window (${b.quotaPeak} of ${b.quota.unitsPerWindow})`,
    );
    assert.ok(
      b.optimumUnits >= b.messages * 20 && b.optimumMs > b.quota.windowMs,
      'the backfill needs more than one window at 2026 costs (the pacing is exercised)',
    );
    // The smoke run opens a thread every 250 ms, far more than the 5 % of the window the backfill leaves the user: 429s are its figure, not a failure.
    assert.ok(
      b.opens.count > 0 && b.opens.statuses['200'] > 0,
      `the user opened threads during the backfill (${JSON.stringify(b.opens.statuses)})`,
    );
    assert.ok(
      Object.keys(b.opens.statuses).every((s) => s === '200' || s === '429'),
      `every open answered, or was paced (${JSON.stringify(b.opens.statuses)})`,
    );
    assert.ok(
      b.unitsPerMessage > 0 && b.unitsPerMessage < 25 && b.quotaSpent > b.messages * 10,
      `units per backfilled message (${b.unitsPerMessage})`,
    );
    const scale = report.resync;
    assert.ok(
      scale.fill.check.equal && scale.fill.check.storedInbox === scale.messages,
      'the unpaced backfill stored the whole inbox',
    );
    assert.ok(scale.resync.check.equal, "after the resync the stored inbox is the provider's");
    assert.ok(
      scale.resync.units > 0 && scale.resync.share < 0.05 && scale.refused === 0,
      'the resync spent under 5 % of fetching every message, none refused',
    );
    assert.ok(
      scale.quotaPeak <= scale.quota.unitsPerWindow && scale.resync.fetchAllUnits >= scale.messages * 20,
      'within the limit; fetching every message at 2026 costs',
    );
    assert.ok(
      scale.resync.calls['messages.list'] > 0 && scale.resync.calls['messages.get'] < scale.resync.changed,
      'it listed ids and fetched fewer messages than changed',
    );
    assert.ok(
      report.corpus.tokens.corpus.n > 0 && report.corpus.tokens.corpus.max <= 2_500,
      'corpus prompts counted, within the token cap',
    );
    assert.ok(report.corpus.tokens.hostile.max <= 2_500, 'hostile prompts within the token cap');
    assert.equal(
      report.corpus.eventLoop.busy.non200,
      0,
      'every thread of the corpus and hostile inbox opened with 200',
    );
    assert.ok(report.corpus.eventLoop.busy.threadsOpened > 0 && Number.isFinite(report.corpus.eventLoop.busy.p99Ms));
    const alone = report.corpus.eventLoop.alone;
    assert.ok(
      alone && alone.threads >= 10 && alone.opens === 2 * alone.threads && alone.non200 === 0,
      'each hostile thread opened alone, twice, with 200',
    );
    assert.ok(Number.isFinite(alone.maxMs) && alone.worst.length > 0);
  });
});
