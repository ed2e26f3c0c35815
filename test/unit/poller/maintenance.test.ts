/**
 * The maintenance round's own rules, with the database and the services scripted: stale
 * accounts are found before watches are renewed (a lapsed watch still earns its resync),
 * one failing resync does not stop the others, rounds never overlap, and stop waits for the
 * resync in flight without starting another.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../../../server/domain/errors.ts';
import type { WatchService } from '../../../server/domain/mail/watch.service.ts';
import { createLogger } from '../../../server/logger.ts';
import { createMaintenance } from '../../../server/poller/maintenance.ts';

function world(opts: { stale: string[]; resync?: (accountId: string) => Promise<unknown> }) {
  const events: string[] = [];
  const orm = {
    em: {
      getConnection: () => ({
        async execute(sql: string) {
          assert.match(sql, /from sync_states/);
          events.push('find stale');
          return opts.stale.map((account_id) => ({ account_id }));
        },
      }),
    },
  } as unknown as MikroORM;
  const watch = {
    async renewDue() {
      events.push('renew');
      return { renewed: 0, failed: [] };
    },
  } as unknown as WatchService;
  const maintenance = createMaintenance({
    orm,
    watch,
    log: createLogger({ level: 'silent' }),
    everyMs: 10,
    sync: {
      async fullResync(accountId) {
        events.push(`resync ${accountId}`);
        return opts.resync?.(accountId);
      },
    },
  });
  return { maintenance, events };
}

describe('maintenance round', () => {
  it('finds the stale accounts before renewing watches, then resyncs each; a failure does not stop the others', async () => {
    const w = world({ stale: ['a', 'b', 'c'], resync: async (id) => (id === 'b' ? Promise.reject(new AppError('SYNC_FAILED')) : undefined) });
    const round = await w.maintenance.runOnce();
    assert.deepEqual(w.events, ['find stale', 'renew', 'resync a', 'resync b', 'resync c']);
    assert.equal(round.resynced, 2);
    assert.deepEqual(round.stale, ['a', 'b', 'c']);
  });

  it('never runs two rounds at once, and stop waits for the resync in flight and starts no other', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inFlight = 0;
    let maxInFlight = 0;
    const w = world({
      stale: ['a', 'b'],
      resync: async () => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await gate;
        inFlight--;
      },
    });
    w.maintenance.start();
    await new Promise((r) => setTimeout(r, 80)); // several ticks while the first round is held
    assert.deepEqual(w.events, ['find stale', 'renew', 'resync a'], 'one round only');
    let stopped = false;
    const stopping = w.maintenance.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(stopped, false, 'stop waits for the resync in flight');
    release();
    await stopping;
    assert.equal(maxInFlight, 1);
    assert.deepEqual(w.events, ['find stale', 'renew', 'resync a'], 'nothing started after stop');
  });
});
