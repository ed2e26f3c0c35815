/**
 * The Gmail stand-in counts the requests it holds at once per user (and per user and endpoint),
 * from arrival until the answer is handed to the connection: what the bench reads as the
 * provider fetches one account had in flight (bench item 13's heavy opens).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MAILBOX, startGmailStandIn, type GmailStandIn } from '../../../../stand-ins/gmail.stand-in.ts';

describe('gmail stand-in: requests in flight', () => {
  let gmail: GmailStandIn;
  let threadId: string;
  before(async () => {
    gmail = await startGmailStandIn({ latencyMs: 150 });
    threadId = gmail.addMessage(DEFAULT_MAILBOX, { subject: 'Held', bodyText: 'x'.repeat(10_000) }).threadId;
  });
  after(() => gmail.close());

  const get = (path: string) => fetch(`${gmail.url}gmail/v1/users/me/${path}`, { headers: { Authorization: 'Bearer tok' } }).then((r) => r.arrayBuffer());

  it('counts the most held at once, by user and by endpoint, and starts again from what is held on reset', async () => {
    await Promise.all([get(`threads/${threadId}`), get(`threads/${threadId}`), get(`threads/${threadId}`), get('profile')]);
    assert.equal(gmail.inFlightPeak(DEFAULT_MAILBOX, 'threads.get'), 3);
    assert.equal(gmail.inFlightPeak(DEFAULT_MAILBOX.toUpperCase()), 4, 'every endpoint of the user, its address in any case');
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
});
