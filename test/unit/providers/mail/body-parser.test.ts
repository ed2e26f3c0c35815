/**
 * The body worker pool is shared by every user (issue 31): its queue is bounded (one more
 * parse is SERVICE_UNAVAILABLE with a Retry-After, at once), and so are the bytes of the answers
 * it holds (issue 44), a worker's heap is capped, and a parse's time counts from when a worker
 * starts it, not while it waits its turn. Small pools and bounds are passed in.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { OAuth2Client } from 'google-auth-library';
import { createGmailFactory } from '../../../../server/providers/gmail.ts';
import { readdirSync, readFileSync } from 'node:fs';
import {
  BUSY_RETRY_AFTER_SECONDS,
  createBodyParser,
  WORKER_NICE,
} from '../../../../server/providers/mail/body-parser.ts';
import { UnusableAnswerError } from '../../../../server/providers/mail/thread-answer.ts';
import { startGmailStandIn } from '../../../../stand-ins/gmail.stand-in.ts';
import { threadMessages } from '../../../helpers/providers.ts';

const leaf = (mimeType: string, content: string) => ({
  mimeType,
  headers: [{ name: 'Content-Type', value: `${mimeType}; charset=utf-8` }],
  body: { data: Buffer.from(content).toString('base64url') },
});
const answerOf = (id: string, html: string) =>
  Buffer.from(
    JSON.stringify({
      id: 't1',
      messages: [
        {
          id,
          threadId: 't1',
          labelIds: ['INBOX'],
          snippet: '',
          internalDate: '1790000000000',
          payload: { ...leaf('text/html', html), headers: [{ name: 'Subject', value: id }] },
        },
      ],
    }),
  );
async function* chunks(bytes: Uint8Array) {
  yield bytes;
}
const auth = {
  credentials: { access_token: 'tok' },
  setCredentials() {},
  getAccessToken: async () => ({ token: 'tok' }),
} as unknown as OAuth2Client;

describe('body worker pool', () => {
  it('a full queue refuses at once with SERVICE_UNAVAILABLE and a Retry-After; the accepted parses finish', async (t) => {
    const parser = createBodyParser({ inlineBytes: 1024, maxThreads: 1, maxQueue: 1 });
    t.after(() => parser.close());
    const html = `<p>${'row '.repeat(1_000)}</p>`;
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd', 'e'].map((id) => parser.parseThread(chunks(answerOf(id, html)))),
    );
    const refused = results.filter((r) => r.status === 'rejected');
    const parsed = results.filter((r) => r.status === 'fulfilled');
    assert.ok(refused.length >= 2, `${refused.length} refused of 5 with one worker and a queue of one`);
    for (const r of refused)
      assert.deepEqual([r.reason.code, r.reason.retryAfter], ['SERVICE_UNAVAILABLE', BUSY_RETRY_AFTER_SECONDS]);
    for (const r of parsed) assert.ok(Array.isArray(r.value) && r.value[0]!.bodyHtml.startsWith('<p>row'));
    assert.equal(parser.offloaded, parsed.length, 'a refused answer never reached the pool');
    // The pool drained: the next parse is taken.
    assert.ok(Array.isArray(await parser.parseThread(chunks(answerOf('f', html)))));
  });

  it("through the provider client, a full pool is the route's SERVICE_UNAVAILABLE, never a parse retried", async (t) => {
    const standIn = await startGmailStandIn();
    const bodies = createBodyParser({ inlineBytes: 1024, maxThreads: 1, maxQueue: 1 });
    t.after(() => Promise.all([standIn.close(), bodies.close()]));
    const ids = Array.from(
      { length: 5 },
      (_, i) =>
        standIn.addMessage('alice@example.com', { subject: `T${i}`, bodyHtml: `<p>${'cell '.repeat(1_000)}</p>` })
          .threadId,
    );
    const api = createGmailFactory({ rootUrl: standIn.url, bodies })(auth);
    const results = await Promise.allSettled(ids.map((id) => threadMessages(api, id)));
    const codes = results.map((r) => (r.status === 'rejected' ? r.reason.code : 'ok'));
    assert.ok(
      codes.every((c) => c === 'ok' || c === 'SERVICE_UNAVAILABLE'),
      codes.join(),
    );
    assert.ok(codes.includes('ok'));
    assert.ok(bodies.offloaded <= 5, 'a refused parse is not tried again without its HTML');
  });

  it('a parse that waited its turn still has its whole time; one that outgrows the heap cap fails alone', async (t) => {
    // One worker, so the second parse waits while the first runs; each has 10 s from its own start (the worker
    // runs at nice 10: beside three other shards on two cores one parse took over 3 s).
    const parser = createBodyParser({ inlineBytes: 1024, maxThreads: 1, maxQueue: 4, timeoutMs: 10_000 });
    const tight = createBodyParser({ inlineBytes: 1024, maxThreads: 1, maxOldGenerationSizeMb: 64 });
    t.after(() => Promise.all([parser.close(), tight.close()]));
    const html = `<table>${'<tr><td>cell <b>x</b></td></tr>'.repeat(3_000)}</table>`;
    const both = await Promise.all(['a', 'b'].map((id) => parser.parseThread(chunks(answerOf(id, html)))));
    for (const got of both)
      assert.ok(
        Array.isArray(got) && got[0]!.bodyHtml.includes('<b>x</b>'),
        "neither lost its HTML to the other's time",
      );

    const huge = answerOf('big', `<p>${'y'.repeat(24 * 1024 * 1024)}</p>`);
    await assert.rejects(tight.parseThread(chunks(huge)), UnusableAnswerError);
    assert.ok(
      Array.isArray(await tight.parseThread(chunks(answerOf('small', html)))),
      'the pool goes on after a worker ran out of heap',
    );
  });

  it('a worker leaves once idle for its idle time, and the next big parse starts another', async (t) => {
    const parser = createBodyParser({ inlineBytes: 1024, maxThreads: 1, idleMs: 100 });
    t.after(() => parser.close());
    const html = `<p>${'row '.repeat(1_000)}</p>`;
    const leaves = async () => {
      for (const deadline = Date.now() + 10_000; parser.workers > 0; await new Promise((r) => setTimeout(r, 20))) {
        assert.ok(Date.now() < deadline, 'the idle worker left');
      }
    };
    assert.ok(Array.isArray(await parser.parseThread(chunks(answerOf('a', html)))));
    assert.equal(parser.offloaded, 1);
    await leaves();
    assert.ok(Array.isArray(await parser.parseThread(chunks(answerOf('b', html)))), 'a new worker parses the next one');
    assert.equal(parser.offloaded, 2);
    await leaves();
  });

  it('a big answer takes its place in the queue as it passes the inline size: refused there, the rest of it is never read', async (t) => {
    const parser = createBodyParser({ inlineBytes: 1024, maxThreads: 1, maxQueue: 1 });
    t.after(() => parser.close());
    const html = `<p>${'row '.repeat(1_000)}</p>`;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // The first answer's place is taken by its first 2 KB; it holds the queue while the rest waits.
    async function* slow(bytes: Uint8Array) {
      yield bytes.subarray(0, 2048);
      await held;
      yield bytes.subarray(2048);
    }
    const first = parser.parseThread(slow(answerOf('a', html)));
    await new Promise((r) => setImmediate(r));
    let read = 0;
    async function* counted(bytes: Uint8Array) {
      for (let at = 0; at < bytes.byteLength; at += 1024) {
        read += Math.min(1024, bytes.byteLength - at);
        yield bytes.subarray(at, at + 1024);
      }
    }
    const answer = answerOf('b', html);
    await assert.rejects(parser.parseThread(counted(answer)), {
      code: 'SERVICE_UNAVAILABLE',
      retryAfter: BUSY_RETRY_AFTER_SECONDS,
    });
    assert.ok(read < answer.byteLength && read <= 2048, `read ${read} of ${answer.byteLength} bytes`);
    release();
    assert.ok(Array.isArray(await first));
  });

  it('holds answers by bytes too, one still being read at the cap: one without room waits for it, its rest unread, and is refused after its wait', async (t) => {
    // Answers of ~59 KB, counted at the cap (64 KiB) while read: room for two being read at once.
    const parser = createBodyParser({
      inlineBytes: 1024,
      maxThreads: 1,
      maxAnswerBytes: 64 * 1024,
      maxQueueBytes: 128 * 1024,
      roomWaitMs: 1_000,
    });
    t.after(() => parser.close());
    const html = `<p>${'row '.repeat(11_000)}</p>`;
    const size = answerOf('a', html).byteLength;
    assert.ok(size > 55_000 && size < 64 * 1024);
    /** An answer in stages, each let go by `next()`; `read`: its bytes handed out so far. */
    const staged = (id: string, ...cuts: number[]) => {
      const bytes = answerOf(id, html);
      const gates = cuts.map(() => Promise.withResolvers<void>());
      let i = 0;
      const stages = { read: 0, next: () => gates[i++]!.resolve() };
      async function* body() {
        let at = 0;
        for (const [k, cut] of [...cuts, bytes.byteLength].entries()) {
          if (k) await gates[k - 1]!.promise;
          stages.read = cut;
          yield bytes.subarray(at, cut);
          at = cut;
        }
      }
      return {
        next: stages.next,
        body: body(),
        get read() {
          return stages.read;
        },
      };
    };
    const settled = (p: Promise<unknown>) =>
      Promise.race([
        p.then(
          () => true,
          () => true,
        ),
        new Promise((r) => setTimeout(() => r(false), 50)),
      ]);
    assert.ok(Array.isArray(await parser.parseThread(chunks(answerOf('w', html)))), 'a worker started');

    const a = staged('a', 2048, size - 100);
    const b = staged('b', 2048);
    const first = parser.parseThread(a.body);
    const second = parser.parseThread(b.body);
    await new Promise((r) => setImmediate(r));
    assert.equal(parser.heldBytes, 128 * 1024, 'two being read: each counted at the cap');
    const c = staged('c');
    const t0 = performance.now();
    await assert.rejects(parser.parseThread(c.body), {
      code: 'SERVICE_UNAVAILABLE',
      retryAfter: BUSY_RETRY_AFTER_SECONDS,
    });
    assert.ok(performance.now() - t0 >= 990, 'refused once it had waited its time for room');
    assert.equal(c.read, size, 'handed out whole, as a provider sends it');

    const d = staged('d', 2048);
    const fourth = parser.parseThread(d.body);
    a.next();
    assert.equal(await settled(fourth), false, 'no room yet: it waits');
    assert.equal(d.read, 2048, 'and its rest is not read meanwhile');
    d.next();
    a.next();
    assert.ok(Array.isArray(await first), 'the first read and parsed');
    assert.ok(Array.isArray(await fourth), 'its room went to the one waiting');
    assert.ok(parser.heldBytes <= 128 * 1024);
    b.next();
    assert.ok(Array.isArray(await second), 'one taken is never refused as it is read');
    assert.equal(parser.heldBytes, 0, 'each answer gives its room back once parsed or refused');
  });
});

describe('the big answers’ shared memory', () => {
  it('is used again: an answer read into a longer one’s buffer is parsed as itself, and answers read together each have one', async (t) => {
    const parser = createBodyParser({ inlineBytes: 1024, maxThreads: 1 });
    t.after(() => parser.close());
    const long = answerOf('long', `<p>${'long row '.repeat(4_000)}</p>`);
    const short = answerOf('short', `<p>${'short '.repeat(500)}</p>`);
    const first = await parser.parseThread(chunks(long));
    assert.ok(Array.isArray(first) && first[0]!.subject === 'long');
    assert.equal(parser.keptBuffers, 1, 'its buffer kept for the next');
    const again = await parser.parseThread(chunks(short));
    assert.ok(Array.isArray(again));
    assert.deepEqual(again, await parser.parseThread(chunks(Buffer.from(short))), 'the same answer, parsed the same');
    assert.equal(again[0]!.subject, 'short');
    assert.ok(!again[0]!.bodyHtml.includes('long'), 'nothing of the longer answer before it');
    assert.equal(parser.keptBuffers, 1, 'the one buffer, used again');
    const together = await Promise.all([long, short].map((a) => parser.parseThread(chunks(a))));
    assert.deepEqual(
      together.map((r) => Array.isArray(r) && r[0]!.subject),
      ['long', 'short'],
    );
    assert.equal(parser.keptBuffers, 2, 'two read at once: two buffers, each kept');
  });

  it('is let go once the parser has been idle for its idle time', async (t) => {
    const parser = createBodyParser({ inlineBytes: 1024, maxThreads: 1, idleMs: 5_000 });
    t.after(() => parser.close());
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const answer = answerOf('a', `<p>${'row '.repeat(1_000)}</p>`);
    assert.ok(Array.isArray(await parser.parseThread(chunks(answer))));
    t.mock.timers.tick(4_000);
    assert.ok(Array.isArray(await parser.parseThread(chunks(answer))), 'a second parse within the idle time');
    t.mock.timers.tick(4_999);
    assert.equal(parser.keptBuffers, 1, 'kept while the parser is busy now and then');
    t.mock.timers.tick(1);
    assert.equal(parser.keptBuffers, 0, 'let go after its idle time');
  });
});

describe('the body worker', () => {
  it('runs at a lower priority than the event loop (its own nice value)', async (t) => {
    const nice = (task: string) =>
      Number(readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
    const loop = nice(String(process.pid));
    const parser = createBodyParser({ inlineBytes: 1024, maxThreads: 1 });
    t.after(() => parser.close());
    assert.ok(Array.isArray(await parser.parseThread(chunks(answerOf('a', `<p>${'row '.repeat(1_000)}</p>`)))));
    const niceness = readdirSync('/proc/self/task').map(nice);
    assert.ok(niceness.includes(WORKER_NICE), `threads' nice values: ${niceness.join(' ')}`);
    assert.equal(nice(String(process.pid)), loop, 'the event loop keeps its own');
  });
});
