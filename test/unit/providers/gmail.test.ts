import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { OAuth2Client } from 'google-auth-library';
import { classifyGmailError, createGmailFactory } from '../../../server/providers/gmail.ts';
import { createQuotaPacer } from '../../../server/providers/gmail-quota.ts';
import { mapLimit } from '../../../server/providers/map-limit.ts';
import { startGmailStandIn } from '../../../stand-ins/gmail.stand-in.ts';
import { threadMessages } from '../../helpers/providers.ts';

const httpError = (status: number, reason?: string, headers?: unknown) =>
  Object.assign(new Error(`HTTP ${status}`), {
    status,
    response: { status, headers, data: reason ? { error: { code: status, errors: [{ reason }] } } : 'x' },
  });

describe('classifyGmailError', () => {
  it('maps provider failures to the closed set', () => {
    const cases: [unknown, string, number | undefined][] = [
      [httpError(429, 'rateLimitExceeded', new Headers({ 'retry-after': '12' })), 'MAIL_RATE_LIMITED', 12],
      [httpError(429, undefined, { 'retry-after': '4' }), 'MAIL_RATE_LIMITED', 4],
      [httpError(429), 'MAIL_RATE_LIMITED', 30],
      [httpError(403, 'userRateLimitExceeded'), 'MAIL_RATE_LIMITED', 30],
      [httpError(403, 'rateLimitExceeded'), 'MAIL_RATE_LIMITED', 30],
      [httpError(403, 'forbidden'), 'SYNC_FAILED', undefined],
      [httpError(401, 'authError'), 'TOKEN_EXPIRED', undefined],
      [
        Object.assign(new Error('x'), { response: { status: 400, data: { error: 'invalid_grant' } } }),
        'TOKEN_EXPIRED',
        undefined,
      ],
      [httpError(500, 'backendError'), 'SYNC_FAILED', undefined],
      [httpError(404, 'notFound'), 'SYNC_FAILED', undefined],
      [Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'SYNC_FAILED', undefined],
      [
        Object.assign(new Error('The operation was aborted due to timeout'), { code: 'TimeoutError' }),
        'SYNC_FAILED',
        undefined,
      ],
    ];
    for (const [err, code, retryAfter] of cases) {
      const app = classifyGmailError(err);
      assert.equal(app.code, code, String((err as Error).message));
      assert.equal(app.retryAfter, retryAfter);
      assert.equal(app.cause, err);
    }
  });
});

describe('mapLimit', () => {
  it('keeps at most `limit` calls in flight and stops starting new ones after a failure', async () => {
    let inFlight = 0;
    let peak = 0;
    const started: number[] = [];
    await assert.rejects(
      mapLimit(
        Array.from({ length: 40 }, (_, i) => i),
        4,
        async (i) => {
          started.push(i);
          inFlight++;
          peak = Math.max(peak, inFlight);
          await new Promise((r) => setTimeout(r, 2));
          inFlight--;
          if (i === 9) throw new Error('nine');
          return i;
        },
      ),
      /nine/,
    );
    assert.equal(peak, 4);
    assert.ok(started.length < 16, `started ${started.length}`);
    assert.deepEqual(await mapLimit([3, 1, 2], 2, async (x) => x * 2), [6, 2, 4]);
  });
});

describe('gmail provider', () => {
  it('refreshes a refused access token once for all parallel calls, and never on a 403', async (t) => {
    const valid = new Set(['fresh']);
    const standIn = await startGmailStandIn({ authorize: (token) => (valid.has(token) ? 'alice@example.com' : null) });
    t.after(() => standIn.close());
    const ids = standIn.seed('alice@example.com', 10, { sentReplies: false }).map((m) => m.id);
    let refreshes = 0;
    const auth = {
      credentials: { access_token: 'stale', refresh_token: 'r' } as Record<string, unknown>,
      setCredentials(c: Record<string, unknown>) {
        this.credentials = c;
      },
      async getAccessToken() {
        if (!this.credentials.access_token) {
          refreshes++;
          this.credentials.access_token = refreshes === 1 ? 'fresh' : `fresh${refreshes}`;
        }
        return { token: this.credentials.access_token as string };
      },
    };
    const api = createGmailFactory({ rootUrl: standIn.url })(auth as unknown as OAuth2Client);
    const got = await api.getMetadata(ids);
    assert.equal(got.messages.length, 10);
    assert.deepEqual(got.failed, []);
    assert.equal(refreshes, 1);
    assert.equal(standIn.calls['messages.get:metadata'], 20);
    assert.equal(api.requests, 20);

    standIn.injectFault({ endpoint: 'profile', status: 403, reason: 'userRateLimitExceeded' });
    await assert.rejects(api.profile(), { code: 'MAIL_RATE_LIMITED' });
    assert.equal(refreshes, 1);
    assert.equal(standIn.calls.profile, 1);

    valid.clear();
    await assert.rejects(api.profile(), { code: 'TOKEN_EXPIRED' }, 'a 401 the refresh cannot cure');
    assert.equal(standIn.calls.profile, 3, 'the refused call and one repetition');
    assert.equal(refreshes, 2);
  });

  it('reads an empty inbox (no messages field) and validates shapes', async (t) => {
    const standIn = await startGmailStandIn();
    t.after(() => standIn.close());
    const auth = {
      credentials: { access_token: 'tok' },
      setCredentials() {},
      getAccessToken: async () => ({ token: 'tok' }),
    };
    const api = createGmailFactory({ rootUrl: standIn.url })(auth as unknown as OAuth2Client);
    assert.deepEqual(await api.listInbox({ maxResults: 50 }), { messages: [] });
    const [m] = standIn.seed('alice@example.com', 1, { sentReplies: false });
    standIn.resetCounters();
    assert.deepEqual(
      await api.listInbox({ maxResults: 50, pageToken: 'no-longer-valid' }),
      { messages: [{ id: m!.id, threadId: m!.threadId }] },
      'a refused page token restarts the listing',
    );
    assert.equal(standIn.calls['messages.list'], 2);
    const profile = await api.profile();
    assert.equal(profile.emailAddress, 'alice@example.com');
    assert.deepEqual(await api.listHistory(profile.historyId), {
      records: [],
      historyId: profile.historyId,
      complete: true,
    });
    standIn.addMessage('alice@example.com');
    standIn.expireHistory('alice@example.com');
    assert.equal(await api.listHistory(profile.historyId), 'expired');
    assert.equal(await threadMessages(api, 'nope'), null);
    standIn.injectFault({ endpoint: 'profile', status: 200, garbage: '{"emailAddress": 5}' });
    await assert.rejects(api.profile(), { code: 'SYNC_FAILED' });
    const watch = await api.watch({ topicName: 'projects/p/topics/t', labelIds: ['INBOX'] });
    assert.ok(watch.expiration.getTime() > Date.now());
    await api.stop();
    assert.deepEqual(
      standIn.watches('alice@example.com').map((w) => w.kind),
      ['watch', 'stop'],
    );
  });

  it('reads three wanted messages of one thread with one threads.get (40 units, not 60), and the rest one by one', async (t) => {
    const standIn = await startGmailStandIn();
    t.after(() => standIn.close());
    const auth = {
      credentials: { access_token: 'tok' },
      setCredentials() {},
      getAccessToken: async () => ({ token: 'tok' }),
    };
    const pacer = createQuotaPacer(
      { take: async () => ({ granted: 0, waitMs: 0 }), record: async () => 0 },
      { profile: '2026', userUnits: 0, dailyBudget: 1e9, flushMs: 60_000 },
    );
    t.after(() => pacer.close());
    const api = createGmailFactory({ rootUrl: standIn.url, pacer })(auth as unknown as OAuth2Client, {
      accountId: 'a',
      purpose: 'backfill',
    });
    const first = standIn.addMessage('alice@example.com', { subject: 'a thread' });
    const thread = [
      first,
      standIn.addMessage('alice@example.com', { threadId: first.threadId }),
      standIn.addMessage('alice@example.com', { threadId: first.threadId }),
    ];
    const pair = standIn.addMessage('alice@example.com', { subject: 'two of a thread' });
    const two = [pair, standIn.addMessage('alice@example.com', { threadId: pair.threadId })];
    const ids = [...thread, ...two].map((m) => m.id);
    standIn.resetCounters();
    const got = await api.getMetadata(ids, new Map([...thread, ...two].map((m) => [m.id, m.threadId])));
    assert.deepEqual(got.messages.map((m) => m.providerMessageId).sort(), [...ids].sort());
    assert.equal(standIn.calls['threads.get:metadata'], 1, 'the thread of three in one read');
    assert.equal(standIn.calls['messages.get:metadata'], 2, 'a pair costs the same either way: read one by one');
    // A thread the provider fails: its wanted messages are read one by one, nothing lost.
    standIn.resetCounters();
    standIn.injectFault({ endpoint: 'threads.get', status: 500 });
    const again = await api.getMetadata(ids.slice(0, 3), new Map(thread.map((m) => [m.id, m.threadId])));
    assert.equal(again.messages.length, 3);
    assert.deepEqual(again.failed, []);
    assert.equal(standIn.calls['messages.get:metadata'], 3);
  });
});
