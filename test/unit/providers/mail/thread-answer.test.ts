/**
 * Opened threads' provider answers: a threads.get answer holds every body of the
 * thread, base64 encoded, so one big message is megabytes of JSON. It is read as it streams
 * in and parsed on the event loop only when small, else on the body worker thread. The
 * structural check: opening a thread with a multi-megabyte message parses no JSON text longer
 * than the inline size on the event loop (a regression — gaxios reading and parsing the answer
 * itself, or the answer parsed inline — shows as a JSON.parse of the whole answer here).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { OAuth2Client } from 'google-auth-library';
import { createGmailFactory, type GmailMessage, type WirePart } from '../../../../server/providers/gmail.ts';
import { createBodyParser } from '../../../../server/providers/mail/body-parser.ts';
import { MAIL_LIMITS } from '../../../../server/providers/mail/mail-text.ts';
import { packBodies } from '../../../../server/providers/mail/packed-bodies.ts';
import {
  AnswerTooLargeError,
  collectMessages,
  normaliseThreadAnswer,
  readAnswer,
  type PackedMessage,
} from '../../../../server/providers/mail/thread-answer.ts';
import { startGmailStandIn } from '../../../../stand-ins/gmail.stand-in.ts';
import { threadMessages } from '../../../helpers/providers.ts';

const leaf = (mimeType: string, content: string): WirePart => ({
  mimeType,
  headers: [{ name: 'Content-Type', value: `${mimeType}; charset=utf-8` }],
  body: { data: Buffer.from(content).toString('base64url') },
});
const message = (id: string, payload: WirePart): GmailMessage => ({
  id,
  threadId: 't1',
  labelIds: ['INBOX'],
  snippet: `snippet ${id}`,
  internalDate: '1790000000000',
  payload: {
    ...payload,
    headers: [
      ...(payload.headers ?? []),
      { name: 'From', value: `Sender <${id}@example.com>` },
      { name: 'Subject', value: `Subject ${id}` },
    ],
  },
});
const answerOf = (messages: GmailMessage[]) => Buffer.from(JSON.stringify({ id: 't1', messages }));
/** The answer as the network hands it over: chunks of at most 64 KB. */
async function* chunks(bytes: Uint8Array, size = 64 * 1024) {
  for (let i = 0; i < bytes.byteLength; i += size) yield bytes.subarray(i, i + size);
}
const auth = {
  credentials: { access_token: 'tok' },
  setCredentials() {},
  getAccessToken: async () => ({ token: 'tok' }),
} as unknown as OAuth2Client;

describe('thread answers', () => {
  const parser = createBodyParser({ inlineBytes: 1024 });
  // Long enough for a worker to start on a loaded machine, far too short for the <div> ladder below.
  const impatient = createBodyParser({ inlineBytes: 1024, timeoutMs: 3_000 });
  after(() => Promise.all([parser.close(), impatient.close()]));

  it('reads an answer as it streams in, whatever its chunks, and refuses one over the limit', async () => {
    const bytes = Buffer.from('x'.repeat(300_000) + 'é'.repeat(1000));
    assert.deepEqual(Buffer.from(await readAnswer(chunks(bytes, 7_777))), bytes);
    assert.equal((await readAnswer(chunks(Buffer.alloc(0)))).byteLength, 0);
    await assert.rejects(readAnswer(chunks(bytes), 100_000), /over 100000 bytes/);
    let read = 0;
    async function* counted() {
      for await (const c of chunks(bytes, 10_000)) read++, yield c;
    }
    await assert.rejects(readAnswer(counted(), 25_000), AnswerTooLargeError);
    assert.equal(read, 3, 'no chunk read past the cap');
  });

  it('parses a small answer inline and a big one on a worker thread, with the same result', async () => {
    const small = answerOf([message('m1', leaf('text/html', '<p onclick="x()">hi <script>x()</script></p>'))]);
    const got = await parser.parseThread(chunks(small));
    assert.equal(parser.offloaded, 0);
    assert.ok(Array.isArray(got));
    assert.deepEqual(
      got.map((m) => [m.providerMessageId, m.fromAddress, m.subject, m.bodyText, m.bodyHtml]),
      [['m1', 'm1@example.com', 'Subject m1', 'hi', '<p>hi </p>']],
    );

    const html = `<div>${'<p>row <img src="https://t.example/p.gif"></p>'.repeat(200)}</div>`;
    const big = answerOf([
      message('m1', {
        mimeType: 'multipart/mixed',
        parts: [leaf('text/html', html), { mimeType: 'application/pdf', filename: 'a.pdf', body: { size: 3 } }],
      }),
      message('m2', leaf('text/plain', 'second')),
    ]);
    const offloaded = await parser.parseThread(chunks(big));
    assert.equal(parser.offloaded, 1);
    assert.deepEqual(offloaded, await normaliseThreadAnswer(big), 'the worker gives what the event loop would');
    assert.ok(Array.isArray(offloaded));
    assert.equal(offloaded[0]!.bodyHtml.match(/data-remote-src=/g)?.length, 200);
    assert.deepEqual(offloaded[0]!.attachments, [{ filename: 'a.pdf', mimeType: 'application/pdf', size: 3 }]);
    assert.equal(offloaded[1]!.bodyText, 'second');
  });

  it('an answer that is not a thread is malformed, small or big', async () => {
    assert.equal(
      await parser.parseThread(chunks(Buffer.from('<html>502 upstream hiccup {"messages": ['))),
      'malformed',
    );
    assert.equal(
      await parser.parseThread(chunks(Buffer.from(JSON.stringify({ id: 't1', messages: 'x'.repeat(5_000) })))),
      'malformed',
    );
    assert.equal(
      await parser.parseThread(chunks(Buffer.from(`{"id": "t1", "messages": [${'1,'.repeat(5_000)}`))),
      'malformed',
    );
    // Messages the worker already posted are dropped when a later one is not a message.
    const body = leaf('text/plain', 'long enough to be parsed on the worker '.repeat(40));
    const lateBad = Buffer.from(
      JSON.stringify({
        id: 't1',
        messages: [message('m1', body), message('m2', body), { threadId: 't1', payload: 'not a part' }],
      }),
    );
    const before = parser.offloaded;
    assert.equal(await parser.parseThread(chunks(lateBad)), 'malformed');
    assert.equal(parser.offloaded, before + 1, 'parsed on the worker');
  });

  it('keeps each message by its place: one given again (the whole parse after a split) replaces the first', () => {
    const sink = collectMessages();
    const m = (id: string) =>
      ({ providerMessageId: id, bodies: packBodies({ bodyText: id, bodyHtml: '', attachments: [] }) }) as PackedMessage;
    sink.each(m('a'), 0);
    sink.each(m('b'), 1);
    sink.each(m('a2'), 0);
    sink.each(m('b2'), 1);
    sink.each(m('c'), 2);
    const got = sink.answer(3);
    assert.ok(Array.isArray(got));
    assert.deepEqual(
      got.map((x) => x.providerMessageId),
      ['a2', 'b2', 'c'],
    );
    assert.equal(sink.answer('malformed'), 'malformed');
  });

  it('a thread that outlasts its time keeps the small messages whole and drops the big HTML', async () => {
    const deep = `${'<div>'.repeat(400_000)}deep`;
    const answer = answerOf([
      message('small', {
        mimeType: 'multipart/alternative',
        parts: [leaf('text/plain', 'small plain'), leaf('text/html', '<p>small html</p>')],
      }),
      message('deep', {
        mimeType: 'multipart/mixed',
        parts: [
          { mimeType: 'multipart/alternative', parts: [leaf('text/plain', 'the plain part'), leaf('text/html', deep)] },
          { mimeType: 'image/png', filename: 'x.png', body: { size: 1 } },
        ],
      }),
    ]);
    const got = await impatient.parseThread(chunks(answer));
    assert.equal(impatient.offloaded, 1);
    assert.ok(Array.isArray(got));
    assert.deepEqual(
      got.map((m) => [m.providerMessageId, m.bodyText, m.bodyHtml, m.attachments]),
      [
        ['small', 'small plain', '<p>small html</p>', []],
        ['deep', 'the plain part', '', [{ filename: 'x.png', mimeType: 'image/png', size: 1 }]],
      ],
    );
  });

  it('opening a thread with a multi-megabyte message parses no big JSON on the event loop', async (t) => {
    const standIn = await startGmailStandIn();
    const bodies = createBodyParser();
    t.after(() => Promise.all([standIn.close(), bodies.close()]));
    const text = 'lorem ipsum dolor sit amet '.repeat(150_000); // 4 MB: a 5.4 MB answer
    const raw = Buffer.from(
      `From: Sender <s@example.com>\r\nTo: alice@example.com\r\nSubject: big text\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${text}`,
    );
    const { threadId } = standIn.addRawMessage('alice@example.com', raw);
    const api = createGmailFactory({ rootUrl: standIn.url, bodies })(auth);

    const parse = JSON.parse;
    let longest = 0;
    JSON.parse = ((json: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
      longest = Math.max(longest, String(json).length);
      return parse(json, reviver);
    }) as typeof JSON.parse;
    const sink = collectMessages();
    const packed: PackedMessage[] = [];
    let count;
    try {
      // As the thread's open stores them (thread-bodies.service.ts): packed, never decoded on the event loop.
      count = await api.getThreadFull(threadId, (m, i) => (packed[i] = m));
    } finally {
      JSON.parse = parse;
    }
    assert.ok(longest <= 16 * 1024, `the event loop parsed ${longest} characters of JSON`);
    packed.forEach(sink.each);
    const messages = sink.answer(count ?? 'malformed');
    assert.ok(Array.isArray(messages));
    assert.equal(bodies.offloaded, 1, 'parsed on the worker thread');
    assert.equal(messages?.length, 1);
    assert.equal(messages[0]!.subject, 'big text');
    assert.equal(messages[0]!.bodyText.length, MAIL_LIMITS.body);
    assert.ok(text.startsWith(messages[0]!.bodyText));
  });

  it("an answer over the parser's cap is SYNC_FAILED, never decoded", async (t) => {
    const standIn = await startGmailStandIn();
    const bodies = createBodyParser({ maxAnswerBytes: 32 * 1024 });
    t.after(() => Promise.all([standIn.close(), bodies.close()]));
    const { threadId } = standIn.addMessage('alice@example.com', { subject: 'Big', bodyText: 'word '.repeat(20_000) });
    const api = createGmailFactory({ rootUrl: standIn.url, bodies })(auth);
    await assert.rejects(
      threadMessages(api, threadId),
      (err: { code?: string; cause?: unknown }) =>
        err.code === 'SYNC_FAILED' && err.cause instanceof AnswerTooLargeError,
    );
    assert.equal(bodies.offloaded, 0);
  });

  it('maps failures of the streamed answer as any other call', async (t) => {
    const valid = new Set(['tok']);
    const standIn = await startGmailStandIn({ authorize: (token) => (valid.has(token) ? 'alice@example.com' : null) });
    t.after(() => standIn.close());
    const { threadId } = standIn.addMessage('alice@example.com', { subject: 'Hello', bodyText: 'Body' });
    let refreshes = 0;
    const stale = {
      credentials: { access_token: 'stale' } as Record<string, unknown>,
      setCredentials(c: Record<string, unknown>) {
        this.credentials = c;
      },
      async getAccessToken() {
        if (!this.credentials.access_token) {
          refreshes++;
          this.credentials.access_token = 'tok';
        }
        return { token: this.credentials.access_token as string };
      },
    };
    const [first] =
      (await threadMessages(
        createGmailFactory({ rootUrl: standIn.url })(stale as unknown as OAuth2Client),
        threadId,
      )) ?? [];
    assert.equal(first?.bodyText, 'Body', 'a refused token is refreshed once and the call repeated');
    assert.equal(refreshes, 1);
    const api = createGmailFactory({ rootUrl: standIn.url })(auth);
    standIn.injectFault({
      endpoint: 'threads.get',
      status: 403,
      reason: 'userRateLimitExceeded',
      retryAfterSeconds: 7,
    });
    await assert.rejects(threadMessages(api, threadId), { code: 'MAIL_RATE_LIMITED', retryAfter: 7 });
    standIn.injectFault({ endpoint: 'threads.get', status: 403, reason: 'forbidden' });
    await assert.rejects(threadMessages(api, threadId), { code: 'SYNC_FAILED' });
    standIn.injectFault({ endpoint: 'threads.get', status: 0, garbage: true });
    await assert.rejects(threadMessages(api, threadId), { code: 'SYNC_FAILED' });
    standIn.injectFault({ endpoint: 'threads.get', status: 0, reset: true });
    await assert.rejects(threadMessages(api, threadId), { code: 'SYNC_FAILED' });
    assert.equal(await threadMessages(api, 'nope'), null);
    const [m] = (await threadMessages(api, threadId)) ?? [];
    assert.equal(m?.bodyText, 'Body');
  });
});
