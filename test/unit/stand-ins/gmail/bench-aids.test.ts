/**
 * What the Gmail stand-in offers benchmarks (bench item 13's heavy opens): it counts the requests
 * it holds at once per user (and per user and endpoint), from arrival until the answer is handed
 * to the connection, the provider fetches one account had in flight; and it can keep threads.get
 * answers and send them again, the same bytes, while the mailbox has not changed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MAILBOX, startGmailStandIn, type GmailStandIn } from '../../../../stand-ins/gmail.stand-in.ts';

describe('gmail stand-in: what benchmarks read and keep', () => {
  let gmail: GmailStandIn;
  let threadId: string;
  before(async () => {
    gmail = await startGmailStandIn({ latencyMs: 150 });
    threadId = gmail.addMessage(DEFAULT_MAILBOX, { subject: 'Held', bodyText: 'x'.repeat(10_000) }).threadId;
  });
  after(() => gmail.close());

  const get = (path: string) =>
    fetch(`${gmail.url}gmail/v1/users/me/${path}`, { headers: { Authorization: 'Bearer tok' } }).then((r) =>
      r.arrayBuffer(),
    );

  it('counts the most held at once, by user and by endpoint, and starts again from what is held on reset', async () => {
    await Promise.all([
      get(`threads/${threadId}`),
      get(`threads/${threadId}`),
      get(`threads/${threadId}`),
      get('profile'),
    ]);
    assert.equal(gmail.inFlightPeak(DEFAULT_MAILBOX, 'threads.get'), 3);
    assert.equal(
      gmail.inFlightPeak(DEFAULT_MAILBOX.toUpperCase()),
      4,
      'every endpoint of the user, its address in any case',
    );
    assert.equal(gmail.inFlightPeak('bob@example.com'), 0);

    gmail.resetCounters();
    assert.equal(gmail.inFlightPeak(DEFAULT_MAILBOX), 0, 'nothing held when reset');
    await get(`threads/${threadId}`);
    await get(`threads/${threadId}`);
    assert.equal(gmail.inFlightPeak(DEFAULT_MAILBOX, 'threads.get'), 1, 'one after the other');

    const held = get(`threads/${threadId}`);
    await new Promise((r) => setTimeout(r, 50));
    gmail.resetCounters();
    assert.equal(gmail.inFlightPeak(DEFAULT_MAILBOX, 'threads.get'), 1, 'a request held across the reset still counts');
    await held;
  });

  it('keeps threads.get answers when asked: the same bytes as made anew, made again once the mailbox moved, none kept when off', async () => {
    const answer = async (format = 'full') => {
      const res = await fetch(`${gmail.url}gmail/v1/users/me/threads/${threadId}?format=${format}`, {
        headers: { Authorization: 'Bearer tok' },
      });
      return { status: res.status, length: res.headers.get('content-length'), text: await res.text() };
    };
    const made = await answer();
    gmail.keepThreadAnswers(true);
    try {
      assert.deepEqual(await answer(), made, 'made and kept');
      assert.deepEqual(await answer(), made, 'sent again as kept');
      const minimal = await answer('minimal');
      assert.notEqual(minimal.text, made.text, 'each format its own');
      gmail.addMessage(DEFAULT_MAILBOX, { threadId, bodyText: 'a reply' });
      const moved = await answer();
      assert.equal(JSON.parse(moved.text).messages.length, 2, 'the mailbox moved: made again');
      assert.deepEqual(await answer(), moved);
      assert.equal(Number(moved.length), Buffer.byteLength(moved.text));
    } finally {
      gmail.keepThreadAnswers(false);
    }
    assert.equal(JSON.parse((await answer()).text).messages.length, 2);
  });
});
