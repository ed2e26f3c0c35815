/** Which worker a new job wakes (server/jobs/wakeups.ts): one idle worker per job, in turn. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createWakePolicy } from '../../../server/jobs/wakeups.ts';

describe('job wake-ups', () => {
  it('wakes one idle worker per job, in turn, and none that is busy', () => {
    const woken: string[] = [];
    const policy = createWakePolicy(['a', 'b', 'c'], (id) => woken.push(id));
    policy.heard();
    policy.heard();
    policy.heard();
    policy.heard();
    assert.deepEqual(woken, ['a', 'b', 'c', 'a']);
    woken.length = 0;
    policy.started('b');
    policy.heard(); // next in turn is b, busy: c
    policy.heard(); // then a
    policy.heard(); // b still busy: c
    assert.deepEqual(woken, ['c', 'a', 'c']);
  });

  it('when every worker is busy, the first to finish fetches at once, once', () => {
    const woken: string[] = [];
    const policy = createWakePolicy(['a', 'b'], (id) => woken.push(id));
    policy.started('a');
    policy.started('b');
    policy.heard();
    policy.heard();
    assert.deepEqual(woken, []);
    policy.finished('b');
    assert.deepEqual(woken, ['b']);
    policy.finished('a');
    assert.deepEqual(woken, ['b'], 'one fetch owed, not one per job: a full batch fetches again by itself');
  });

  it('wakes every worker after the listener was away', () => {
    const woken: string[] = [];
    const policy = createWakePolicy(['a', 'b', 'c'], (id) => woken.push(id));
    policy.started('a');
    policy.wakeAll();
    assert.deepEqual(woken, ['a', 'b', 'c']);
  });
});
