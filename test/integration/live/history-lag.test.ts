/**
 * The provider notifies before its history shows the change (issue 28; runtime contract §3
 * Change notifications): the notified history id is a target. A sync whose history ends
 * before it looks again, backing off, until it gets there or the window ends (shortened here
 * by LIVE_HISTORY_LAG); a notification the checkpoint already passed costs no sync.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startLiveWorld, waitFor } from './live-harness.ts';

describe('history lagging its notifications', () => {
  it('syncs again until the history reaches the notified id; a point already passed costs nothing; a target never reached stops at the window', async (t) => {
    const w = await startLiveWorld(t, { forward: false });
    await w.idle();
    const checkpoint = (await w.checkpoint())!;
    const outcomes = () => w.app.logs.filter((l) => l.msg === 'mail sync job done').map((l) => l.outcome);

    // Notified first; the history shows the message only after the first sync found nothing.
    const before = w.syncLogs().length;
    w.publish({ historyId: String(checkpoint + 3n) });
    await waitFor(() => w.syncLogs().length > before, "the notification's sync");
    const late = w.gmail.addMessage('alice@example.com', { subject: 'In the history a little after its notification' });
    await waitFor(
      async () => (await w.stored()).inbox.some((x) => x.startsWith(`${late.id}:`)),
      'the lagging message stored without another notification',
    );
    await w.idle();
    assert.ok(outcomes().includes('history-lag'), 'a sync behind the notified id looked again');

    // A notification for a point the checkpoint already passed: no sync.
    const settled = w.syncLogs().length;
    w.publish({ historyId: String(checkpoint) });
    await w.drained();
    assert.equal(w.syncLogs().length, settled, 'a point already passed costs no sync');

    // A target the history never reaches: a few syncs, backing off, then it stops.
    const chasing = w.syncLogs().length;
    w.publish({ historyId: String((await w.checkpoint())! + 1_000n) });
    await w.drained();
    const spent = w.syncLogs().length - chasing;
    assert.ok(
      spent >= 2 && spent <= 5,
      `${spent} syncs chased a history id that never came (1 s, then doubling, for 4 s)`,
    );
  });
});
