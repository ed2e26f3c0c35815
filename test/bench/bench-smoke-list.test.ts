/** `npm run bench -- --smoke --only list,tracing,triage` runs end to end (bench-smoke.helper.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertHeadings, runSmoke } from './bench-smoke.helper.ts';

describe('npm run bench -- --smoke: the thread list, tracing and analysis on arrival', () => {
  it('loads the list on the service and the floor, with tracing off and on, and beside analysis on arrival', {
    timeout: 180_000,
  }, async (t) => {
    const { markdown, report } = await runSmoke(t, 'list');
    assertHeadings(markdown, [
      '## 1. Thread list',
      '## 4. Cost growth',
      '## 5. Memory',
      '## 10. Tracing',
      '## 15. Analysis on arrival',
      '## Query plans',
    ]);
    assert.equal(report.list.length, report.settings.sizes.length);
    for (const l of report.list) {
      for (const target of [l.service, l.bare, ...(l.serviceModerate ? [l.serviceModerate, l.bareModerate] : [])]) {
        assert.ok(target.requests > 0, `${target.target} answered`);
        assert.equal(target.non2xx + target.errors, 0, `${target.target}: no failed request`);
      }
    }
    for (const [name, target] of Object.entries(
      report.tracing.targets as Record<string, { rounds: { requests: number; non2xx: number; errors: number }[] }>,
    )) {
      for (const run of target.rounds)
        assert.ok(run.requests > 0 && run.non2xx + run.errors === 0, `tracing ${name}: answered`);
    }
    assert.ok(
      report.tracing.targets.on.spansPerRequest >= 3,
      'tracing on: each request and its statements were exported',
    );
    const [main, small] = report.autoTriage.runs;
    assert.ok(
      main.stored === main.messages && main.analysed === main.eligible && main.eligible > 0,
      'triage: every eligible thread analysed',
    );
    for (const run of [main, small]) {
      assert.equal(run.ineligibleAnalysed, 0, `triage ${run.name}: no ineligible thread analysed`);
      assert.ok(
        run.tokens.maxOverShare <= 0 && run.tokens.reservedLeft === 0,
        `triage ${run.name}: no account past its share`,
      );
      assert.ok(
        run.peakInFlight > 0 && run.peakInFlight <= run.bound,
        `triage ${run.name}: AI calls in flight within the bound`,
      );
    }
    assert.ok(
      small.analysed < small.eligible && small.onDemand.status === 200,
      'triage small budget: the share ran out, the on-demand route still answered',
    );
    assert.equal(main.controlAnalysed, 0, 'triage control: nothing analysed with the setting off');
    assert.deepEqual(
      report.autoTriage.list.map((w: { kind: string }) => w.kind),
      ['idle', 'burst', 'idle', 'control'],
    );
    for (const w of report.autoTriage.list)
      assert.ok(w.requests > 0 && w.non200 === 0, `triage list ${w.kind}: answered`);
  });
});
