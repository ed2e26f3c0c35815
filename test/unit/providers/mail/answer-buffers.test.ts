/**
 * The big answers' shared memory is used again, and what a big parse leaves behind is collected
 * soon (issue 44): a concurrent major collection is asked for after a parse, at most once per gap,
 * and when the kept buffers are let go. The collection and the clock are passed in.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAnswerBuffers } from '../../../../server/providers/mail/answer-buffers.ts';

describe('answer buffers', () => {
  it('ask for a collection after a parse at most once per gap', () => {
    let now = 0;
    let collections = 0;
    const buffers = createAnswerBuffers({
      maxBytes: 1024,
      idleMs: 60_000,
      collectGapMs: 1_000,
      collect: () => collections++,
      now: () => now,
    });
    buffers.parsed();
    assert.equal(collections, 1, 'the first parse asks at once');
    now = 999;
    buffers.parsed();
    assert.equal(collections, 1, 'a parse within the gap asks nothing');
    now = 1_000;
    buffers.parsed();
    assert.equal(collections, 2, 'the gap passed: asked again');
  });

  it('use a kept buffer again, and let the kept ones go after the idle time with a collection', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let collections = 0;
    const buffers = createAnswerBuffers({ maxBytes: 1024, idleMs: 5_000, collect: () => collections++ });
    const first = buffers.take();
    assert.equal(first.maxByteLength, 1024);
    buffers.give(first);
    assert.equal(buffers.take(), first, 'used again');
    buffers.give(first);
    t.mock.timers.tick(4_999);
    assert.deepEqual([buffers.kept, collections], [1, 0]);
    t.mock.timers.tick(1);
    assert.deepEqual([buffers.kept, collections], [0, 1], 'let go, and a collection asked for');
    assert.notEqual(buffers.take(), first, 'a new one after that');
  });
});
