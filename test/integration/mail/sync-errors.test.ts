import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createSyncService } from '../../../server/domain/mail/sync/sync.service.ts';
import { AppError } from '../../../server/domain/errors.ts';
import { toAppError } from '../../../server/errors/classify.ts';
import { createGmailFactory } from '../../../server/providers/gmail.ts';
import { createTestDatabase } from '../../helpers/database.ts';
import type { FaultSpec } from '../../../stand-ins/gmail.stand-in.ts';
import { ALICE, recoveryState, startMailApp, type MailApp } from './mail-app.ts';

async function dataSnapshot(mail: MailApp) {
  return {
    state: await recoveryState(mail),
    messages: await mail.sql('select provider_message_id, label_ids, updated_at from mail_messages order by 1'),
  };
}

async function expectError(mail: MailApp, code: string, status: number) {
  const res = await mail.sync();
  const body = await res.json();
  assert.equal(res.status, status, JSON.stringify(body));
  assert.equal(body.error.code, code);
  return res;
}

/** A TCP proxy in front of PostgreSQL that can be cut, to take "the database" away mid-request. */
async function databaseProxy(target: URL) {
  const sockets = new Set<net.Socket>();
  let down = false;
  const server = net.createServer((client) => {
    if (down) return void client.destroy();
    const upstream = net.connect(Number(target.port), target.hostname);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    for (const s of [client, upstream]) s.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    cut() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      down = false;
    },
    close() {
      down = true;
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('sync error mapping', () => {
  it('provider quota is MAIL_RATE_LIMITED with Retry-After; other failures are SYNC_FAILED; nothing is stored', async (t) => {
    const mail = await startMailApp(t);
    // One message a thread: every message comes by messages.get, which the faults below refuse (no thread read escapes them).
    for (let i = 0; i < 30; i++) mail.gmail.addMessage(ALICE, { subject: `m ${i}` });
    const cases: [FaultSpec, string, number, string | null][] = [
      [{ endpoint: 'messages.list', status: 429, retryAfterSeconds: 7 }, 'MAIL_RATE_LIMITED', 429, '7'],
      // Every fetch refused (one met part-way keeps what was fetched: sync-listing.test.ts).
      [
        { endpoint: 'messages.get', status: 403, reason: 'userRateLimitExceeded', times: Infinity },
        'MAIL_RATE_LIMITED',
        429,
        '30',
      ],
      [{ endpoint: 'profile', status: 403, reason: 'rateLimitExceeded' }, 'MAIL_RATE_LIMITED', 429, '30'],
      [{ endpoint: 'messages.list', status: 403, reason: 'forbidden' }, 'SYNC_FAILED', 502, null],
      // Every fetch failing: the provider is down (one failing message costs itself: sync-ownership.test.ts).
      [{ endpoint: 'messages.get', status: 500, times: Infinity }, 'SYNC_FAILED', 502, null],
      [{ endpoint: 'messages.list', status: 0, garbage: true }, 'SYNC_FAILED', 502, null],
      [{ endpoint: 'messages.get', status: 0, garbage: '{"id": 42}', times: Infinity }, 'SYNC_FAILED', 502, null],
      [{ endpoint: 'messages.get', status: 0, reset: true, times: Infinity }, 'SYNC_FAILED', 502, null],
    ];
    const refreshesBefore = mail.providers.identity.calls.token;
    for (const [fault, code, status, retryAfter] of cases) {
      mail.gmail.resetCounters();
      mail.gmail.injectFault(fault);
      const res = await expectError(mail, code, status);
      assert.equal(res.headers.get('retry-after'), retryAfter, `${fault.endpoint} ${fault.status}`);
      // The failure surfaces at once: no client retry (counted, not timed).
      if (fault.endpoint !== 'messages.get')
        assert.equal(mail.gmail.calls[fault.endpoint], 1, 'no retry of the failed call');
      else assert.ok(mail.gmail.calls['messages.get']! <= 30, 'no message asked for twice');
      mail.gmail.clearFaults();
      assert.deepEqual(await dataSnapshot(mail), {
        state: { history_id: null, full_sync_page_token: null, full_sync_active: false, last_synced_at: null },
        messages: [],
      });
      // Each case a first failure (the same messages failing so again would be set aside).
      await mail.sql('delete from mail_set_aside');
    }
    assert.equal(
      mail.providers.identity.calls.token,
      refreshesBefore,
      'a quota 403 triggers no token refresh and retry',
    );
    // The lease was released every time: a sync now succeeds.
    assert.equal((await mail.syncOk()).messagesSynced, 30);
  });

  it('incremental failures keep the checkpoint and data as they were', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 10, { sentReplies: false });
    await mail.drain();
    mail.gmail.addMessage(ALICE, { subject: 'pending' });
    const before = await dataSnapshot(mail);
    for (const [fault, code, status] of [
      [{ endpoint: 'history.list', status: 429 }, 'MAIL_RATE_LIMITED', 429],
      [{ endpoint: 'history.list', status: 503 }, 'SYNC_FAILED', 502],
      [{ endpoint: 'history.list', status: 0, garbage: true }, 'SYNC_FAILED', 502],
      [{ endpoint: 'messages.get', status: 429 }, 'MAIL_RATE_LIMITED', 429],
    ] as [FaultSpec, string, number][]) {
      mail.gmail.resetCounters();
      mail.gmail.injectFault(fault);
      await expectError(mail, code, status);
      assert.equal(
        mail.gmail.calls[fault.endpoint],
        1,
        `${fault.endpoint} ${fault.status}: no retry of the failed call`,
      );
      mail.gmail.clearFaults();
      assert.deepEqual(await dataSnapshot(mail), before);
    }
    assert.equal((await mail.syncOk()).messagesSynced, 1);
  });

  it('a revoked grant is TOKEN_EXPIRED 401 and marks the account for reconnection', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 5);
    mail.providers.identity.revokeUser(mail.providers.identity.currentUser.sub);
    await expectError(mail, 'TOKEN_EXPIRED', 401);
    assert.equal((await mail.app.account({ email: ALICE }))!.needsReconnect, true);
    assert.deepEqual((await dataSnapshot(mail)).messages, []);
  });

  it('an access token the provider refuses (401) is refreshed once and the call repeated', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 12, { sentReplies: false });
    const refreshes = mail.providers.identity.calls.token;
    mail.providers.identity.expireAccessTokens();
    assert.equal((await mail.syncOk()).messagesSynced, 12);
    assert.equal(mail.providers.identity.calls.token, refreshes + 1);
    assert.equal(
      mail.gmail.calls.profile,
      2,
      'the refused call and its one repetition (the listing ends without asking again)',
    );
  });

  it('every provider call has a timeout', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 5);
    const { id } = (await mail.app.account({ email: ALICE }))!;
    const service = createSyncService({
      orm: mail.app.container.orm,
      gmail: createGmailFactory({ rootUrl: mail.gmail.url, timeoutMs: 300 }),
      credentials: mail.app.container.credentials,
      log: mail.app.container.log,
    });
    mail.gmail.injectFault({ endpoint: 'messages.get', status: 0, hang: true, afterCalls: 2, times: Infinity });
    const started = Date.now();
    // The hanging fetches time out: most of the call's fetches failing is the provider's failure.
    await assert.rejects(
      service.syncAccount(id),
      (err: unknown) => err instanceof AppError && err.code === 'SYNC_FAILED',
    );
    // Bounded by the client's 300 ms timeout (a hang would hold the call until the test's own timeout).
    assert.ok(Date.now() - started < 10_000, `the hanging fetches timed out (${Date.now() - started} ms)`);
    mail.gmail.clearFaults();
    assert.equal((await service.syncAccount(id)).messagesSynced, 5);
  });

  it('the database going away mid-sync is SERVICE_UNAVAILABLE 503 and leaves the stored data as it was', async (t) => {
    const db = await createTestDatabase();
    const proxy = await databaseProxy(new URL(db.url));
    t.after(async () => {
      await proxy.close();
      await db.drop();
    });
    const mail = await startMailApp(t, { databaseUrl: proxy.url });
    mail.gmail.seed(ALICE, 80, { sentReplies: false });
    await mail.syncOk();
    const before = await dataSnapshot(mail);
    mail.gmail.setLatency(150);
    const pending = mail.sync();
    setTimeout(() => proxy.cut(), 250);
    const res = await pending;
    assert.equal(res.status, 503);
    assert.equal((await res.json()).error.code, 'SERVICE_UNAVAILABLE');
    assert.ok(res.headers.get('retry-after'));
    proxy.restore();
    mail.gmail.setLatency(0);
    assert.deepEqual(await dataSnapshot(mail), before);
    // The lease could not be released while the database was away; it expires on its own.
    await mail.sql('update sync_states set lease_until = null');
    assert.equal((await mail.syncOk()).messagesSynced, 30);
  });

  it('maps database outages inside the service to SERVICE_UNAVAILABLE', async () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    assert.equal(toAppError(err).code, 'SERVICE_UNAVAILABLE');
  });
});
