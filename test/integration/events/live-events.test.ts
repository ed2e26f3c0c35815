/**
 * Live events across two instances on one database: a change synced by instance A reaches a
 * stream open on instance B (pg_notify at A's commit, B's LISTEN connection), resuming with
 * Last-Event-ID, the stream limits, and disconnect ending the account's streams on both.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { buildTestApp, WEB_ORIGIN, type TestApp } from '../../helpers/app.ts';
import { csrfHeaders, signIn } from '../../helpers/providers.ts';
import { ALICE, allThreads, startMailApp, type MailApp } from '../mail/mail-app.ts';
import { noteNotification } from '../../../server/domain/mail/sync/states/index.ts';
import type { StreamLimits } from '../../../server/domain/events/events.service.ts';
import { openSse, type SseReader } from './sse-reader.ts';

async function twoInstances(t: TestContext, streamLimits?: StreamLimits) {
  // Both instances read the same sessions: same cookie keys, same token key.
  const env = {
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
  const a = await startMailApp(t, { env });
  const b = await buildTestApp(t, {
    env: { ...a.providers.env, ...env },
    databaseUrl: a.app.databaseUrl,
    overrides: streamLimits ? { streamLimits } : {},
  });
  return { a, b };
}

const cookie = (mail: MailApp) => ({ Cookie: mail.browser.cookieHeader() });
const open = (app: TestApp, headers: Record<string, string>, t: TestContext): Promise<SseReader> =>
  openSse(`${app.url}/api/mail/events`, headers).then((s) => {
    t.after(() => s.close());
    return s;
  });

/** Our ids of Alice's threads, as the list shows them: every thread of her inbox at the provider. */
async function threadIds(mail: MailApp): Promise<string[]> {
  const listed = await allThreads(mail);
  const atProvider = new Set(mail.gmail.inbox(ALICE).map((m) => m.threadId));
  assert.deepEqual(new Set(listed.map((t) => t.mailThreadId)), atProvider, 'the list shows every inbox thread');
  return listed.map((t) => t.id);
}

/** Our id of the thread the provider calls `providerThreadId`, from the list. */
async function listedThreadId(mail: MailApp, providerThreadId: string): Promise<string | undefined> {
  return (await allThreads(mail)).find((t) => t.mailThreadId === providerThreadId)?.id;
}

/** Reads `threads` events until every one of `expected` was named (a drain may commit in several pages). */
async function untilNamed(s: SseReader, expected: string[]): Promise<void> {
  const named = new Set<string>();
  while (expected.some((id) => !named.has(id))) {
    const e = await s.next((f) => f.json?.type === 'threads');
    for (const id of e.json.threadIds) named.add(id);
  }
  assert.deepEqual([...named].sort(), expected);
}

/** Waits for a condition the server reaches on its own (a closed socket noticed), checking on each turn of the event loop. */
async function until(ok: () => boolean): Promise<void> {
  while (!ok()) await new Promise((r) => setImmediate(r));
}

describe('live mail events', () => {
  it('a change synced on instance A reaches a stream on instance B; resume with and without the events known', async (t) => {
    const { a, b } = await twoInstances(t);
    const s = await open(b, cookie(a), t);
    assert.equal(s.res.status, 200);
    assert.match(s.res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const first = await s.next();
    assert.equal(first.event, 'sync');
    assert.equal(first.json.state, 'backfilling');
    assert.deepEqual(first.json.progress, { stored: 0, estimatedTotal: null });
    assert.ok(first.id);

    a.gmail.seed(ALICE, 3, { sentReplies: false });
    await a.drain();
    await untilNamed(s, await threadIds(a));
    const current = await s.next((e) => e.json.type === 'sync' && e.json.state === 'current');
    assert.ok(current.json.lastSyncedAt);
    const lastSeen = current.id!;
    s.close();
    await s.ended;

    // Missed while away: resumed from the last id, on the other instance.
    const added = a.gmail.addMessage(ALICE, { subject: 'while away' });
    await a.drain();
    const resumed = await open(a.app, { ...cookie(a), 'Last-Event-ID': lastSeen }, t);
    assert.equal((await resumed.next()).json.type, 'sync');
    const missed = await resumed.next((e) => e.json.type === 'threads');
    const newThread = await listedThreadId(a, added.threadId);
    assert.deepEqual(missed.json.threadIds, [newThread]);
    assert.ok(BigInt(missed.id!) > BigInt(lastSeen));

    // An id no longer known (pruned from the account's log): reset, then where the account stands.
    await a.sql('delete from mail_events where id <= ?', [lastSeen]);
    const unknown = await open(b, { ...cookie(a), 'Last-Event-ID': lastSeen }, t);
    assert.equal((await unknown.next()).json.type, 'reset');
    assert.equal((await unknown.next()).json.type, 'sync');
  });

  it('the tRPC subscription serves the same events on /trpc, resuming from lastEventId', async (t) => {
    const { a, b } = await twoInstances(t);
    const s = await openSse(`${b.url}/trpc/mail.events`, cookie(a));
    t.after(() => s.close());
    assert.equal(s.res.status, 200);
    const first = await s.next((e) => e.json?.type === 'sync');
    assert.ok(first.id);
    a.gmail.seed(ALICE, 2, { sentReplies: false });
    await a.drain();
    await untilNamed(s, await threadIds(a));
    const lastSeen = s.frames.filter((f) => f.id).at(-1)!.id!;
    s.close();
    await s.ended;

    // tRPC's client sends the last id back as `lastEventId` when it reconnects.
    const added = a.gmail.addMessage(ALICE, { subject: 'while away' });
    await a.drain();
    const resumed = await openSse(`${b.url}/trpc/mail.events?lastEventId=${lastSeen}`, cookie(a));
    t.after(() => resumed.close());
    const newThread = await listedThreadId(a, added.threadId);
    assert.deepEqual((await resumed.next((e) => e.json?.type === 'threads')).json.threadIds, [newThread]);
  });

  it('refuses without a session (401 envelope) and past the stream limits (429 with Retry-After)', async (t) => {
    const { a, b } = await twoInstances(t, { perSession: 2, perAccount: 3, retryAfterSeconds: 7, heartbeatMs: 50 });
    const anon = await fetch(`${b.url}/api/mail/events`);
    assert.equal(anon.status, 401);
    assert.equal((await anon.json()).error.code, 'AUTH_REQUIRED');
    // tRPC's SSE protocol opens first and reports a refusal as its `serialized-error` event (the client raises it as ApiError).
    const anonTrpc = await openSse(`${b.url}/trpc/mail.events`, {});
    t.after(() => anonTrpc.close());
    const refusal = await anonTrpc.next((e) => e.event === 'serialized-error');
    assert.equal(refusal.json.data.appCode, 'AUTH_REQUIRED', refusal.data);

    const streams = [await open(b, cookie(a), t), await open(b, cookie(a), t)];
    for (const s of streams) await s.next();
    // The heartbeat is a comment line, at the interval the instance was given.
    assert.equal(await streams[1]!.comment(), 'ping');
    const third = await fetch(`${b.url}/api/mail/events`, { headers: cookie(a) });
    assert.equal(third.status, 429);
    assert.equal(third.headers.get('retry-after'), '7');
    assert.equal((await third.json()).error.code, 'RATE_LIMITED');
    const thirdTrpc = await openSse(`${b.url}/trpc/mail.events`, cookie(a));
    t.after(() => thirdTrpc.close());
    assert.equal((await thirdTrpc.next((e) => e.event === 'serialized-error')).json.data.appCode, 'RATE_LIMITED');
    // A second session of the account may open one more, up to the account's limit (3).
    const other = a.app.browser();
    await signIn(other);
    const otherCookie = { Cookie: other.cookieHeader() };
    await (await open(b, otherCookie, t)).next();
    const overAccount = await fetch(`${b.url}/api/mail/events`, { headers: otherCookie });
    assert.equal(overAccount.status, 429);
    await overAccount.body?.cancel();
    // A closed stream frees its place.
    streams[0]!.close();
    await streams[0]!.ended;
    await until(() => b.container.liveEvents.size() === 2);
    const again = await open(b, cookie(a), t);
    assert.equal(again.res.status, 200);
    assert.equal((await again.next()).json.type, 'sync');
  });

  it('disconnect ends the account streams on both instances; logout ends the session streams', async (t) => {
    const { a, b } = await twoInstances(t);
    // Logout of a second session ends its stream only.
    const other = a.app.browser();
    await signIn(other);
    const ofOther = await open(b, { Cookie: other.cookieHeader() }, t);
    await ofOther.next();
    const onA = await open(a.app, cookie(a), t);
    const onB = await open(b, cookie(a), t);
    await onA.next();
    await onB.next();
    assert.equal((await other.fetch('/auth/logout', { method: 'POST' })).status, 204);
    await ofOther.ended;
    // The hub lets a stream go once its place in event_streams is free (a statement after the end).
    await until(() => b.container.liveEvents.size() === 1);
    assert.deepEqual(
      await a.sql('select count(*)::int as n from event_streams'),
      [{ n: 2 }],
      'the first session streams on A and B are still open',
    );
    assert.equal(b.container.liveEvents.size(), 1);

    const res = await a.browser.fetch('/auth/provider/disconnect', {
      method: 'POST',
      headers: csrfHeaders(a.csrfToken, WEB_ORIGIN),
    });
    assert.equal(res.status, 204);
    await Promise.all([onA.ended, onB.ended]);
  });

  it('a stream ends after its longest life; reconnecting checks the session again', async (t) => {
    const { a, b } = await twoInstances(t, { perSession: 5, perAccount: 20, retryAfterSeconds: 30, maxStreamMs: 300 });
    const s = await open(b, cookie(a), t);
    const first = await s.next();
    await s.ended;
    const again = await open(b, { ...cookie(a), 'Last-Event-ID': first.id! }, t);
    assert.equal((await again.next()).json.type, 'sync', 'resumed while the session lives');
    const signedOut = { ...cookie(a) };
    assert.equal((await a.browser.fetch('/auth/logout', { method: 'POST' })).status, 204);
    await again.ended;
    const refused = await fetch(`${b.url}/api/mail/events`, { headers: { ...signedOut, 'Last-Event-ID': first.id! } });
    assert.equal(refused.status, 401);
    await refused.body?.cancel();
  });

  it('a lost LISTEN connection is reopened: its streams get a reset, then hear changes again', async (t) => {
    const { a, b } = await twoInstances(t);
    const s = await open(b, cookie(a), t);
    await s.next();
    // Both instances listen on their own connection; end them all (as a database restart would).
    const listeners = await a.sql<{ pid: number }>(
      `select pid from pg_stat_activity where application_name = 'mia-listen mia_mail_events' and datname = current_database()`,
    );
    assert.equal(listeners.length, 2);
    await a.sql(
      'select pg_terminate_backend(pid) from pg_stat_activity where application_name = ? and datname = current_database()',
      ['mia-listen mia_mail_events'],
    );
    assert.equal((await s.next()).json.type, 'reset');
    assert.equal((await s.next()).json.type, 'sync');
    a.gmail.seed(ALICE, 1, { sentReplies: false });
    await a.drain();
    await untilNamed(s, await threadIds(a));
  });

  it('a notification turns the account to catching_up (once), and the sync it starts back to current', async (t) => {
    const { a, b } = await twoInstances(t);
    a.gmail.seed(ALICE, 1, { sentReplies: false });
    await a.drain();
    const s = await open(b, cookie(a), t);
    assert.equal((await s.next()).json.state, 'current');
    const account = await a.app.account({ email: ALICE });
    const before = await a.sql<{ n: number }>('select count(*)::int as n from mail_events');
    await noteNotification(a.app.container.orm.em.fork(), account!.id);
    await noteNotification(a.app.container.orm.em.fork(), account!.id);
    assert.equal((await s.next()).json.state, 'catching_up');
    const after = await a.sql<{ n: number }>('select count(*)::int as n from mail_events');
    assert.equal(after[0]!.n - before[0]!.n, 1, 'one event for two notifications');
    await a.drain();
    assert.equal((await s.next((e) => e.json.type === 'sync')).json.state, 'current');
  });
});
