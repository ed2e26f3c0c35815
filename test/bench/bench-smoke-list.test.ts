/** `npm run bench -- --smoke --only list,tracing` runs end to end (bench-smoke.helper.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertHeadings, runSmoke } from './bench-smoke.helper.ts';

describe('npm run bench -- --smoke: the thread list and tracing', () => {
  it('loads the list on the service and the floor, and with tracing off and on', { timeout: 180_000 }, async (t) => {
    const { markdown, report } = await runSmoke(t, 'list');
    assertHeadings(markdown, ['## 1. Thread list', '## 4. Cost growth', '## 5. Memory', '## 10. Tracing', '## Query plans']);
    assert.equal(report.list.length, report.settings.sizes.length);
    for (const l of report.list) {
      for (const target of [l.service, l.bare, ...(l.serviceModerate ? [l.serviceModerate, l.bareModerate] : [])]) {
        assert.ok(target.requests > 0, `${target.target} answered`);
        assert.equal(target.non2xx + target.errors, 0, `${target.target}: no failed request`);
      }
    }
    for (const [name, target] of Object.entries(report.tracing.targets as Record<string, { rounds: { requests: number; non2xx: number; errors: number }[] }>)) {
      for (const run of target.rounds) assert.ok(run.requests > 0 && run.non2xx + run.errors === 0, `tracing ${name}: answered`);
    }
    assert.ok(report.tracing.targets.on.spansPerRequest >= 3, 'tracing on: each request and its statements were exported');
  });
});
