/**
 * A new sync job wakes one idle worker of the instance (server/jobs/wakeups.ts), not every
 * worker of the queue as pg-boss's own listener did: with four idle workers that look only
 * every 300 s, the job runs at once, and exactly one of them fetched.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QUEUES } from '../../../server/jobs/engine.ts';
import { ALICE, startLiveWorld, waitFor } from './live-harness.ts';

describe('sync jobs: wake-ups', () => {
  it('a new job wakes one idle worker, which runs it long before any poll', async (t) => {
    const w = await startLiveWorld(t, { intake: false, concurrency: { workers: 4, batch: 1, pollSeconds: 300 } });
    await w.idle();
    const { engine } = w.app.container.liveInbox;
    const fetchedOn = () =>
      engine.boss
        .getWipData()
        .filter((d) => d.name === QUEUES.mailSync)
        .map((d) => d.lastFetchedOn);
    await waitFor(
      () => fetchedOn().length === 4 && fetchedOn().every((x) => x !== null),
      'every worker has fetched once',
    );
    const before = fetchedOn();

    const m = w.gmail.addMessage(ALICE, { subject: 'Wakes one worker' });
    assert.equal(await engine.enqueueSync({ accountId: w.accountId, reason: 'notification' }), true);
    await waitFor(
      async () => (await w.stored()).inbox.some((x) => x.startsWith(`${m.id}:`)),
      'stored, well before the 300 s poll',
      30_000,
    );
    const fetched = fetchedOn().filter((x, i) => x !== before[i]).length;
    assert.equal(fetched, 1, `workers that fetched for the one job: ${fetched}`);
  });
});
