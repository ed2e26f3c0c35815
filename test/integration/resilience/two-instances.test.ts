/**
 * Two service processes on one database and one Pub/Sub subscription (the deployment
 * behind a load balancer): rate limits are counted once across both, only one sync per
 * account runs at a time whichever instance is asked, every notification is taken in (by
 * one or the other) and synced once by the shared job queue, each scheduled job exists once,
 * and a session started on one works on the other.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from '../../../harness/browser.ts';
import { csrf, signIn, waitSyncIdle } from '../../../harness/client.ts';
import { sql } from '../../../harness/pg-cluster.ts';
import { type ServiceProcess, sharedSecrets, startServiceProcess } from '../../../harness/service-process.ts';
import { type StandIns, startStandIns, SUBSCRIPTION, user } from '../../../harness/stand-ins.ts';
import { eventually } from '../../../harness/wait.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';

const USERS = [user('alice'), user('bob'), user('carol')];

let db: TestDatabase;
let providers: StandIns;
let a: ServiceProcess;
let b: ServiceProcess;

/** The same browser as seen by the other instance: same cookies, other base URL. */
function onOther(browser: Browser, other: ServiceProcess): Browser {
  const twin = other.browser();
  for (const [k, v] of browser.cookies) twin.cookies.set(k, v);
  return twin;
}

/** Waits until no sync job of the user's account waits or runs, and its lease is free. */
const waitIdle = (email: string) => waitSyncIdle(db.url, email);

describe('two instances on one database and one subscription', () => {
  before(async () => {
    db = await createTestDatabase();
    providers = await startStandIns({ users: USERS, ackDeadlineSeconds: 3 });
    const env = { ...providers.env, ...sharedSecrets(), TRUST_PROXY: 'true', RATE_LIMIT_MAX: '30' };
    [a, b] = await Promise.all([
      startServiceProcess(null, { databaseUrl: db.url, env, name: 'A' }),
      startServiceProcess(null, { databaseUrl: db.url, env, name: 'B' }),
    ]);
  });

  after(async () => {
    await Promise.all([a?.kill(), b?.kill()]);
    await providers?.close();
    await db?.drop();
  });

  it('rate limits hold across the instances: one client gets the limit once, not once per instance', async () => {
    const headers = { 'X-Forwarded-For': '10.20.30.40' };
    // 40 requests to the global bucket (RATE_LIMIT_MAX=30), alternating and concurrent.
    const global = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fetch(`${(i % 2 ? b : a).url}/api/status/incidents`, { headers }).then((r) => r.status),
      ),
    );
    assert.equal(global.filter((s) => s === 200).length, 30, `statuses ${global.join(',')}`);
    assert.equal(global.filter((s) => s === 429).length, 10);
    // A fixed bucket: 60 analytics events per 60 s, split over both instances.
    const body = JSON.stringify({ event: 'page_view', properties: { path: '/two' } });
    const events = await Promise.all(
      Array.from({ length: 70 }, (_, i) =>
        fetch(`${(i % 2 ? b : a).url}/api/analytics/event`, {
          method: 'POST',
          headers: { ...headers, 'Content-Type': 'application/json' },
          body,
        }).then((r) => r.status),
      ),
    );
    assert.equal(events.filter((s) => s === 200).length, 60);
    assert.equal(events.filter((s) => s === 429).length, 10);
    const [{ n }] = await sql<{ n: number }>(
      db.url,
      "select count(*)::int as n from analytics_events where properties->>'path' = '/two'",
    );
    assert.equal(n, 60, 'exactly the accepted events were stored');
  });

  it('a session started on one instance works on the other, and ends on both', async () => {
    providers.identity.setCurrentUser(USERS[0]!.email);
    providers.gmail.seed(USERS[0]!.email, 3, { sentReplies: false });
    const onA = a.browser();
    const { csrfToken } = await signIn(onA);
    const onB = onOther(onA, b);
    const session = await (await onB.fetch('/auth/session')).json();
    assert.deepEqual(session, { authenticated: true, csrfToken, email: USERS[0]!.email });
    // The sign-in's background sync (on either instance) stores the inbox; both read it.
    assert.ok(
      await eventually(async () => (await (await onB.fetch('/api/mail/threads')).json()).total === 3, 10_000),
      'B reads what the backfill stored',
    );
    await waitIdle(USERS[0]!.email);
    const synced = await onB.fetch('/api/mail/sync', {
      method: 'POST',
      headers: csrf(csrfToken, { 'X-Forwarded-For': '10.1.1.1' }),
    });
    assert.equal(synced.status, 200, 'a CSRF-protected call on B with the token A issued');
    const list = await (await onA.fetch('/api/mail/threads')).json();
    assert.equal(list.total, 3, 'A reads the same inbox');
    assert.equal((await onB.fetch('/auth/logout', { method: 'POST' })).status, 204);
    const ended = await (await onA.fetch('/auth/session')).json();
    assert.equal(ended.authenticated, false, 'logging out on B ends the session on A');
  });

  it('only one sync per account runs at a time, whichever instance is asked', async () => {
    providers.identity.setCurrentUser(USERS[1]!.email);
    // Seeded before the sign-in registers the watch: the 120 messages publish no notifications.
    providers.gmail.seed(USERS[1]!.email, 120, { sentReplies: false });
    const onA = a.browser();
    const { csrfToken } = await signIn(onA);
    const onB = onOther(onA, b);
    // The sign-in's background sync stores them; then the store is emptied and the checkpoint
    // reset, so the only syncs competing for the lease are the test's own route calls.
    await waitIdle(USERS[1]!.email);
    await sql(db.url, 'delete from mail_messages where account_id = (select id from accounts where email = $1)', [
      USERS[1]!.email,
    ]);
    await sql(db.url, 'delete from mail_threads where account_id = (select id from accounts where email = $1)', [
      USERS[1]!.email,
    ]);
    await sql(
      db.url,
      'update sync_states set history_id = null, full_sync_page_token = null, full_sync_active = false where account_id = (select id from accounts where email = $1)',
      [USERS[1]!.email],
    );
    providers.gmail.setLatency(80);
    try {
      for (let round = 0; round < 3; round++) {
        const calls = [onA, onB, onA, onB].map((br, i) =>
          br
            .fetch('/api/mail/sync', {
              method: 'POST',
              headers: csrf(csrfToken, { 'X-Forwarded-For': `10.2.${round}.${i}` }),
            })
            .then(async (r) => ({ status: r.status, body: await r.json() })),
        );
        const results = await Promise.all(calls);
        const ok = results.filter((r) => r.status === 200);
        const busy = results.filter((r) => r.status === 429);
        assert.equal(ok.length, 1, `round ${round}: exactly one sync ran (${results.map((r) => r.status).join(',')})`);
        assert.equal(busy.length, 3);
        for (const r of busy) assert.equal(r.body.error.code, 'RATE_LIMITED');
        assert.equal(
          ok[0]!.body.messagesSynced,
          round < 2 ? 50 : 20,
          'each run did a full batch of its own, not a share of one',
        );
      }
    } finally {
      providers.gmail.setLatency(0);
    }
    const rows = await sql<{ n: number; d: number }>(
      db.url,
      'select count(*)::int as n, count(distinct provider_message_id)::int as d from mail_messages m join accounts x on x.id = m.account_id where x.email = $1',
      [USERS[1]!.email],
    );
    assert.deepEqual(rows[0], { n: 120, d: 120 });
  });

  it('every notification is taken in by one of the two intakes and synced once, none lost, none left unacknowledged', async () => {
    // Every user signed in (watch registered) and synced once, on either instance.
    const emails: string[] = [];
    for (const [i, u] of USERS.entries()) {
      providers.identity.setCurrentUser(u.email);
      const br = (i % 2 ? b : a).browser();
      await signIn(br);
      await waitIdle(u.email); // the sign-in's background sync stored the inbox
      emails.push(u.email);
    }
    assert.ok(
      await eventually(
        async () => emails.every((e) => providers.gmail.watches(e).some((w) => w.kind === 'watch')),
        5_000,
      ),
    );
    await eventually(async () => {
      const s = providers.pubsub.stats(SUBSCRIPTION);
      return s.available + s.leased === 0;
    }, 15_000);
    providers.pubsub.resetCounters();
    const linesBefore = { a: a.logs.length, b: b.logs.length };

    // 60 new messages over the three mailboxes, interleaved, each with its notification.
    const added: string[] = [];
    for (let i = 0; i < 60; i++) added.push(providers.gmail.addMessage(emails[i % 3]!, { subject: `n${i}` }).id);
    const all = await eventually(
      async () => {
        const rows = await sql<{ id: string }>(
          db.url,
          'select provider_message_id as id from mail_messages where provider_message_id = any($1)',
          [added],
        );
        return rows.length === added.length;
      },
      30_000,
      250,
    );
    assert.ok(all, 'every new message reached the store through the intakes and the jobs');
    const settled = await eventually(async () => {
      const s = providers.pubsub.stats(SUBSCRIPTION);
      return s.available + s.leased === 0;
    }, 20_000);
    assert.ok(settled, 'every notification was acknowledged');
    assert.ok(providers.pubsub.stats(SUBSCRIPTION).acked >= 60, 'one acknowledgement per notification at least');
    const handledBy = (p: ServiceProcess, from: number) =>
      p.logs
        .slice(from)
        .filter((l) => l.msg === 'notification batch taken in')
        .reduce((n, l) => n + Number(l.notifications), 0);
    const byA = handledBy(a, linesBefore.a);
    const byB = handledBy(b, linesBefore.b);
    assert.ok(byA + byB >= 60, `deliveries handled: A ${byA}, B ${byB}`);
    const dup = await sql(
      db.url,
      'select provider_message_id from mail_messages group by account_id, provider_message_id having count(*) > 1',
    );
    assert.deepEqual(dup, []);
    for (const e of emails) await waitIdle(e);
    const leases = await sql(db.url, 'select account_id from sync_states where lease_owner is not null');
    assert.deepEqual(leases, [], 'no lease left behind');
    // Each scheduled job is registered once for the cluster, whatever the number of instances.
    const schedules = await sql<{ name: string }>(db.url, 'select name from pgboss.schedule order by name');
    assert.deepEqual(
      schedules.map((r) => r.name),
      ['purge-expired', 'quiet-sweep', 'watch-renewal'],
    );
    assert.ok(a.alive && b.alive);
  });
});
