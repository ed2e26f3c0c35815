/**
 * coalesced(): concurrent requests of one key counted by one consume(key, n) of the real
 * limiter (rate-limiter-flexible's memory store here), each answered as if it had gone alone.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { coalesced } from '../../../server/http/rate-limit.ts';

function counting(points: number, delayMs = 0) {
  const limiter = new RateLimiterMemory({ points, duration: 60 });
  const calls: { key: string; points: number }[] = [];
  const failures = new Map<number, Error>();
  return {
    calls,
    /** The n-th consume (1-based) fails with err. */
    failCall(n: number, err: Error) {
      failures.set(n, err);
    },
    consume(key: string, n: number) {
      calls.push({ key, points: n });
      const err = failures.get(calls.length);
      if (err) return Promise.reject(err);
      const counted = limiter.consume(key, n);
      return delayMs
        ? new Promise<RateLimiterRes>((resolve, reject) => setTimeout(() => counted.then(resolve, reject), delayMs))
        : counted;
    },
  };
}

const outcome = (p: Promise<RateLimiterRes>) =>
  p.then(
    (r) => ({ ok: true, remaining: r.remainingPoints, consumed: r.consumedPoints }),
    (e: unknown) =>
      e instanceof RateLimiterRes
        ? { ok: false, remaining: e.remainingPoints, consumed: e.consumedPoints }
        : { error: (e as Error).message },
  );

describe('coalesced rate-limit counting', () => {
  it('counts the first request alone and those arriving during its upsert in one consume, each with its own position', async () => {
    const limiter = counting(3);
    const consume = coalesced(limiter, 3);
    const results = await Promise.all(Array.from({ length: 5 }, () => outcome(consume('client-a'))));
    assert.deepEqual(limiter.calls, [
      { key: 'client-a', points: 1 },
      { key: 'client-a', points: 4 },
    ]);
    assert.deepEqual(results, [
      { ok: true, remaining: 2, consumed: 1 },
      { ok: true, remaining: 1, consumed: 2 },
      { ok: true, remaining: 0, consumed: 3 },
      { ok: false, remaining: 0, consumed: 4 },
      { ok: false, remaining: 0, consumed: 5 },
    ]);
  });

  it('sends the requests that arrive during an upsert in the next one, not one each', async () => {
    const limiter = counting(100, 20);
    const consume = coalesced(limiter, 100);
    const first = outcome(consume('client-a'));
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(limiter.calls.length, 1, 'the first count is under way');
    const later = Array.from({ length: 4 }, () => outcome(consume('client-a')));
    const all = await Promise.all([first, ...later]);
    assert.deepEqual(
      limiter.calls.map((c) => c.points),
      [1, 4],
    );
    assert.deepEqual(
      all.map((r) => r.consumed),
      [1, 2, 3, 4, 5],
    );
  });

  it('keeps keys apart', async () => {
    const limiter = counting(1);
    const consume = coalesced(limiter, 1);
    const [a, b] = await Promise.all([outcome(consume('client-a')), outcome(consume('client-b'))]);
    assert.deepEqual([a.ok, b.ok], [true, true]);
    assert.deepEqual(limiter.calls.map((c) => c.key).sort(), ['client-a', 'client-b']);
  });

  it('fails every request of a batch whose count failed, and counts the next ones again', async () => {
    const limiter = counting(10, 20);
    const consume = coalesced(limiter, 10);
    limiter.failCall(2, new Error('database unavailable'));
    const results = await Promise.all([
      outcome(consume('client-a')),
      outcome(consume('client-a')),
      outcome(consume('client-a')),
    ]);
    assert.deepEqual(
      limiter.calls.map((c) => c.points),
      [1, 2],
    );
    assert.deepEqual(results, [
      { ok: true, remaining: 9, consumed: 1 },
      { error: 'database unavailable' },
      { error: 'database unavailable' },
    ]);
    assert.deepEqual(await outcome(consume('client-a')), { ok: true, remaining: 8, consumed: 2 });
  });

  it('fails a request whose limiter throws instead of rejecting, and does not leave the key stuck', async () => {
    let calls = 0;
    const consume = coalesced(
      {
        consume: () => {
          calls++;
          throw new Error('thrown');
        },
      },
      10,
    );
    assert.deepEqual(await outcome(consume('client-a')), { error: 'thrown' });
    assert.deepEqual(await outcome(consume('client-a')), { error: 'thrown' });
    assert.equal(calls, 2);
  });
});
