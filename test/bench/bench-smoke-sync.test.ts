/** `npm run bench -- --smoke --only sync,synccpu,notifications,heavy,heavyopens` runs end to end (bench-smoke.helper.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertHeadings, runSmoke } from './bench-smoke.helper.ts';

describe('npm run bench -- --smoke: syncing and opening', () => {
  it('syncs through the route, the notification path and the floor, takes in notifications, opens a heavy thread beside a normal user, and heavy threads of several accounts at once', {
    timeout: 180_000,
  }, async (t) => {
    const { markdown, report } = await runSmoke(t, 'sync');
    assertHeadings(markdown, [
      '## 2. Sync',
      '## 3. Notifications',
      '## 11. Sync CPU',
      '## 13. Heavy thread',
      '## 13. Heavy opens',
    ]);
    assert.ok(report.sync.length > 0);
    for (const s of report.sync) for (const run of s.runs) assert.equal(run.status, 200, `${s.kind} sync answered 200`);
    assert.ok(report.notifications.allStoredMs !== null, 'every notified message was stored');
    assert.ok(report.notifications.syncs > 0);
    const cpu = report.syncCpu;
    for (const target of ['route', 'job', 'floor']) {
      assert.ok(
        cpu.rounds.some((r: { target: string; syncs: number }) => r.target === target && r.syncs > 0),
        `sync cpu: ${target} synced`,
      );
      assert.ok(Number.isFinite(cpu.median[target].processMs), `sync cpu: ${target} costed`);
    }
    assert.ok(cpu.profile && cpu.profile.selfByPart.length > 0, 'sync cpu: the profile was read');
    const heavy = report.heavyThread;
    assert.deepEqual(
      heavy.windows.map((w: { kind: string }) => w.kind),
      ['idle', 'heavy'],
    );
    for (const w of heavy.windows)
      assert.ok(
        w.normal.requests > 0 && Number.isFinite(w.loop.maxMs) && w.idleProcessLoop.maxMs > 0,
        `heavy thread: the ${w.kind} window was measured, and an idle process beside it`,
      );
    assert.ok(heavy.windows[1].heavy.opens > 0, 'heavy thread: the heavy clients opened it');
    const opens = report.heavyOpens;
    assert.deepEqual(
      opens.windows.map((w: { kind: string }) => w.kind),
      ['idle', 'heavy'],
    );
    for (const w of opens.windows)
      assert.ok(
        w.normal.requests > 0 && w.idleProcessLoop.maxMs > 0 && w.rssPeakMiB > 0,
        `heavy opens: the ${w.kind} window was measured`,
      );
    const h = opens.windows[1].heavy;
    const set = opens.accounts * opens.opensPerAccount;
    assert.ok(
      h.opens >= set && h.opens % set === 0 && h.sets.length === h.opens / set,
      `heavy opens: whole sets of every account were opened: ${h.opens}`,
    );
    assert.equal(h.inFlightPeak.length, opens.accounts);
    assert.ok(
      h.providerFetches > 0 && h.inFlightPeak.every((n: number) => n >= 1 && n <= 2),
      `heavy opens: each account fetched, at most two at once: ${h.inFlightPeak}`,
    );
  });
});
