import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createBodyCache, serialiseBodies } from '../../../../../server/domain/mail/threads/body-cache.ts';
import { createOpenGate } from '../../../../../server/domain/mail/threads/open-gate.ts';
import { AppError } from '../../../../../server/domain/errors.ts';

describe('body cache', () => {
  it('serialises a body once: its JSON text as UTF-8, and as raw JSON values JSON.stringify copies as they are', () => {
    const { bodies, chars } = serialiseBodies('line "one"\n\ttab \u2028 é 😀', '<a href="x">q</a>');
    assert.equal(bodies.text, 'line "one"\n\ttab \u2028 é 😀');
    assert.equal(bodies.jsonText.toString('utf8'), JSON.stringify(bodies.text));
    assert.equal(bodies.jsonHtml.toString('utf8'), JSON.stringify(bodies.html));
    const raw = bodies.raw();
    assert.equal(bodies.raw(), raw, 'made once');
    assert.equal(
      JSON.stringify({ bodyText: raw.text, bodyHtml: raw.html }),
      JSON.stringify({ bodyText: bodies.text, bodyHtml: bodies.html }),
    );
    assert.equal(
      chars,
      bodies.text.length + bodies.html.length + 2 * (bodies.jsonText.length + bodies.jsonHtml.length),
    );
  });

  it('answers only for the version it holds', () => {
    const cache = createBodyCache();
    cache.put('m1', 'v1', 'text', 'html');
    assert.equal(cache.get('m1', 'v1')?.text, 'text');
    assert.equal(cache.get('m1', 'v2'), undefined, 'stored again (refetched or re-sanitised): not answered');
    assert.equal(cache.get('m1', 'v1'), undefined, 'and the old version is dropped');
    assert.deepEqual(cache.size(), { chars: 0, entries: 0 });
  });

  it('holds at most its bound, least recently used out first, and nothing idle too long', () => {
    let now = 0;
    // Each entry: 10 + 10 plain characters, twice 12 + 12 serialised bytes = 68.
    const cache = createBodyCache({ maxChars: 1_224 * 8, idleMs: 1_000, now: () => now });
    for (let i = 0; i < 144; i++) cache.put(`m${i}`, 'v', 'x'.repeat(10), 'y'.repeat(10));
    assert.deepEqual(cache.size(), { chars: 144 * 68, entries: 144 });
    cache.get('m0', 'v');
    cache.put('m144', 'v', 'x'.repeat(10), 'y'.repeat(10));
    assert.deepEqual(cache.size(), { chars: 144 * 68, entries: 144 }, 'one out for the new one');
    assert.ok(cache.get('m0', 'v'), 'used recently: kept');
    assert.equal(cache.get('m1', 'v'), undefined, 'least recently used: out');
    const big = cache.put('big', 'v', 'z'.repeat(1_300), '');
    assert.equal(big.text.length, 1_300, 'a body over an eighth of the bound is answered');
    assert.equal(cache.get('big', 'v'), undefined, 'but not held');
    now = 2_000;
    assert.equal(cache.get('m0', 'v'), undefined);
    assert.deepEqual(cache.size(), { chars: 0, entries: 0 }, 'idle entries are dropped');
  });
});

describe('open gate', () => {
  it('runs one answer per account at a time, first come first served; other accounts do not wait', async () => {
    const gate = createOpenGate({ perAccount: 1, maxWaiting: 2 });
    const order: string[] = [];
    let release!: () => void;
    const first = gate.run('a', () => new Promise<void>((r) => (release = r)).then(() => order.push('a1')));
    const second = gate.run('a', async () => order.push('a2'));
    const third = gate.run('a', async () => order.push('a3'));
    await gate.run('b', async () => order.push('b1'));
    assert.deepEqual(gate.load('a'), { running: 1, waiting: 2 });
    await assert.rejects(
      gate.run('a', async () => order.push('a4')),
      (err: unknown) => err instanceof AppError && err.code === 'SERVICE_UNAVAILABLE' && err.retryAfter === 1,
    );
    release();
    await Promise.all([first, second, third]);
    assert.deepEqual(order, ['b1', 'a1', 'a2', 'a3']);
    assert.deepEqual(gate.load('a'), { running: 0, waiting: 0 });
  });

  it("paces each account's body bytes: a burst at once, then the rate; other accounts and refilled buckets do not wait", async () => {
    let clock = 0;
    let waited: number[] = [];
    const gate = createOpenGate({
      bytesPerSecond: 1_000, // a byte a millisecond
      burstBytes: 100,
      now: () => clock,
      sleep: async (ms) => {
        waited.push(ms);
        clock += ms;
      },
    });
    /** Serves `bytes` to the account; the waits it took before. */
    const open = async (account: string, bytes: number) => {
      waited = [];
      await gate.run(account, async (served) => served(bytes));
      return waited;
    };
    assert.deepEqual(await open('a', 150), [], 'the first answer goes at once, and ends 50 bytes past the burst');
    assert.deepEqual(await open('a', 10), [50], 'the next waits until those 50 bytes are paid');
    assert.deepEqual(await open('b', 500), [], 'another account has a bucket of its own');
    assert.deepEqual(await open('a', 0), [10]);
    clock += 1_000; // both buckets full again
    assert.deepEqual(await open('a', 130), [], 'a refilled bucket serves a burst at once');
    assert.deepEqual(await open('b', 0), []);
    assert.deepEqual(await open('a', 0), [30]);
  });

  it('an answer that failed or served nothing costs nothing', async () => {
    let clock = 0;
    let waited = 0;
    const gate = createOpenGate({
      bytesPerSecond: 1_000,
      burstBytes: 10,
      now: () => clock,
      sleep: async (ms) => (waited += ms),
    });
    await assert.rejects(
      gate.run('a', async () => {
        throw new Error('not found');
      }),
      /not found/,
    );
    for (let i = 0; i < 3; i++) await gate.run('a', async (served) => served(0));
    assert.equal(waited, 0);
  });

  it('frees the place when the answer fails', async () => {
    const gate = createOpenGate();
    await assert.rejects(
      gate.run('a', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await gate.run('a', async () => 'next'), 'next');
    assert.deepEqual(gate.load('a'), { running: 0, waiting: 0 });
  });
});
