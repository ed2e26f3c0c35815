/**
 * PostgreSQL stopped and started again under traffic, with the service running as its own
 * process (server/main.ts) on a cluster of its own: while the database is away every
 * route that needs it answers SERVICE_UNAVAILABLE 503 with Retry-After, promptly, and
 * nothing answers 500 or hangs; once the cluster is back on the same port the service
 * recovers by itself, every acknowledged write is stored, nothing is half-written, and
 * a notification that arrived during the outage is still synced by the background jobs.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { Browser } from '../../../harness/browser.ts';
import { csrf, signIn, syncToEnd, waitSyncIdle } from '../../../harness/client.ts';
import { type Cluster, sql, startCluster } from '../../../harness/pg-cluster.ts';
import {
  type ServiceProcess,
  sharedSecrets,
  startServiceProcess,
  WEB_ORIGIN,
} from '../../../harness/service-process.ts';
import { type StandIns, startStandIns, user } from '../../../harness/stand-ins.ts';
import { eventually, sleep } from '../../../harness/wait.ts';
import { mixedCalls, startTraffic, summarise, type Outcome } from './traffic.ts';

const ALICE = user('alice');
const BOB = user('bob');
const RECOVERY_BOUND_MS = 30_000;
/** Routes that need the database for their answer. */
const DB_ROUTES = ['list', 'detail', 'session', 'analytics', 'sync', 'sync-state', 'incidents'];

let cluster: Cluster;
let providers: StandIns;
let svc: ServiceProcess;
let dbUrl: string;
let alice: Browser;
let aliceCsrf: string;
let outcomes: Outcome[] = [];
let recoveryMs = 0;
let bobMessageId: string;

const accountRows = (email: string) =>
  sql<{ provider_message_id: string; in_inbox: boolean }>(
    dbUrl,
    'select m.provider_message_id, m.in_inbox from mail_messages m join accounts a on a.id = m.account_id where a.email = $1',
    [email],
  );

describe('database stopped and restarted under traffic (service as a child process)', () => {
  before(async () => {
    cluster = await startCluster();
    providers = await startStandIns({ users: [ALICE, BOB], ackDeadlineSeconds: 2 });
    dbUrl = cluster.url();
    // Every acknowledged event is counted as stored below: the anonymous budget (which drops past it) out of the way.
    svc = await startServiceProcess(null, {
      databaseUrl: dbUrl,
      env: { ...providers.env, ...sharedSecrets(), TRUST_PROXY: 'true', ANALYTICS_ANONYMOUS_PER_MINUTE: '1000000' },
    });
    alice = svc.browser();
    aliceCsrf = (await signIn(alice)).csrfToken;
    providers.identity.setCurrentUser(BOB.email);
    const bob = svc.browser();
    const bobCsrf = (await signIn(bob)).csrfToken;
    await eventually(async () => providers.gmail.watches(BOB.email).length > 0, 5_000);
    await syncToEnd(bob, bobCsrf, () => waitSyncIdle(dbUrl, BOB.email)); // bob has a checkpoint
    providers.gmail.seed(ALICE.email, 60, { sentReplies: false });
    await syncToEnd(alice, aliceCsrf, () => waitSyncIdle(dbUrl, ALICE.email));
  });

  after(async () => {
    await svc?.kill();
    await providers?.close();
    await cluster?.close();
  });

  it('runs mixed traffic through a stop and a start of the cluster', async (t) => {
    const { threads } = await (await alice.fetch('/api/mail/threads?limit=100')).json();
    assert.ok(threads.length >= 10, `threads: ${threads.length}`);
    providers.gmail.setLatency(20);
    // New mail keeps arriving, so syncs (the route's and the background jobs') have work to commit.
    const arrivals = setInterval(() => providers.gmail.addMessage(ALICE.email, { subject: 'during the traffic' }), 150);
    const traffic = startTraffic(
      mixedCalls(
        alice,
        aliceCsrf,
        threads.map((t: { id: string }) => t.id),
        WEB_ORIGIN,
      ),
      { workers: 6 },
    );
    // Each phase lasts its time and, on a loaded machine, until it has seen what the tests below
    // count on (a slow service answers fewer requests in the same seconds).
    const answered = (phase: string) => traffic.outcomes.filter((o) => o.phase === phase);
    const acknowledged = (phase: string) =>
      answered(phase).filter((o) => o.route === 'analytics' && o.status === 200).length;
    const seen = (what: () => boolean) => eventually(async () => what(), 30_000, 50);
    try {
      traffic.setPhase('up');
      await sleep(1_500);
      await seen(() => acknowledged('up') >= 6);
      traffic.setPhase('stopping');
      await cluster.stop();
      traffic.setPhase('down');
      bobMessageId = providers.gmail.addMessage(BOB.email, { subject: 'arrived while the database was down' }).id;
      await sleep(3_000);
      await seen(
        () =>
          answered('down').length >= 20 && DB_ROUTES.every((route) => answered('down').some((o) => o.route === route)),
      );
      traffic.setPhase('starting');
      await cluster.start();
      const started = Date.now();
      traffic.setPhase('recovering');
      await eventually(
        async () => (await fetch(`${svc.url}/health`, { headers: { 'X-Forwarded-For': '10.0.0.1' } })).status === 200,
        RECOVERY_BOUND_MS,
        100,
      );
      recoveryMs = Date.now() - started;
      // Pooled connections that the shutdown killed are discarded as they are met: give it a second.
      await sleep(1_000);
      traffic.setPhase('after');
      await sleep(2_000);
      const normal = [...DB_ROUTES, 'health'].filter((r) => r !== 'sync');
      await seen(
        () =>
          answered('after').length >= 20 &&
          acknowledged('after') >= 6 &&
          normal.every((route) => answered('after').some((o) => o.route === route && o.status === 200)),
      );
    } finally {
      clearInterval(arrivals);
      await traffic.stop();
      providers.gmail.setLatency(0);
    }
    outcomes = traffic.outcomes;
    const phases = new Set(outcomes.map((o) => o.phase));
    for (const p of ['up', 'down', 'after']) assert.ok(phases.has(p), `requests were made in phase ${p}`);
    t.diagnostic(
      `recovery: /health 200 ${recoveryMs} ms after the cluster was back; ${JSON.stringify(summarise(outcomes.filter((o) => o.phase === 'after')))}`,
    );
    assert.ok(
      recoveryMs < RECOVERY_BOUND_MS,
      `/health answered 200 again within ${RECOVERY_BOUND_MS} ms (took ${recoveryMs} ms)`,
    );
  });

  it('never answers 500 and never leaves a request unanswered', () => {
    const bad = outcomes.filter((o) => o.status === 0 || (o.status >= 500 && o.status !== 502 && o.status !== 503));
    assert.deepEqual(
      bad.map((o) => `${o.phase} ${o.route}: ${o.failure ?? `${o.status} ${o.code}`}`),
      [],
      JSON.stringify(summarise(outcomes)),
    );
    assert.equal(
      outcomes.filter((o) => o.status === 502).length,
      0,
      'no provider failure was caused by the database outage',
    );
  });

  it('while the database is down, every route that needs it answers SERVICE_UNAVAILABLE 503 with Retry-After, and /health 503', () => {
    const down = outcomes.filter((o) => o.phase === 'down');
    assert.ok(down.length >= 20, `enough requests during the outage (${down.length})`);
    for (const route of DB_ROUTES)
      assert.ok(
        down.some((o) => o.route === route),
        `${route} was requested during the outage`,
      );
    const wrong = down.filter((o) =>
      o.route === 'health'
        ? o.status !== 503 || !/^[1-9]\d*$/.test(o.retryAfter ?? '')
        : o.status !== 503 || o.code !== 'SERVICE_UNAVAILABLE' || !/^[1-9]\d*$/.test(o.retryAfter ?? ''),
    );
    assert.deepEqual(
      wrong.map((o) => `${o.route}: ${o.status} ${o.code} retry-after=${o.retryAfter}`),
      [],
    );
    const slowest = Math.max(...down.map((o) => o.ms));
    assert.ok(slowest < 8_000, `answers came promptly (slowest ${slowest} ms), not after a hang`);
  });

  it('recovers by itself: after the restart every route answers normally again', () => {
    const afterwards = outcomes.filter((o) => o.phase === 'after');
    assert.ok(afterwards.length >= 20, `enough requests after recovery (${afterwards.length})`);
    for (const route of [...DB_ROUTES, 'health'].filter((r) => r !== 'sync')) {
      assert.ok(
        afterwards.some((o) => o.route === route && o.status === 200),
        `${route} answered 200 after recovery`,
      );
    }
    // A sync may meet another one running for the account (a background job's): RATE_LIMITED is the
    // spec's answer then. It is also the answer for up to LEASE_SECONDS when a sync was cut
    // off by the outage: its lease could not be released while the database was away.
    const wrong = afterwards.filter(
      (o) => o.status !== 200 && !(o.route === 'sync' && o.status === 429 && o.code === 'RATE_LIMITED' && o.retryAfter),
    );
    assert.deepEqual(
      wrong.map((o) => `${o.route}: ${o.status} ${o.code}`),
      [],
      JSON.stringify(summarise(afterwards)),
    );
  });

  it('every analytics event acknowledged with 200 is stored (no lost write), before, during and after the outage', async () => {
    const acknowledged = outcomes.filter((o) => o.route === 'analytics' && o.status === 200).map((o) => o.key!);
    assert.ok(acknowledged.length > 10);
    const rows = await sql<{ anonymous_id: string }>(
      dbUrl,
      'select anonymous_id from analytics_events where anonymous_id = any($1::uuid[])',
      [acknowledged],
    );
    assert.equal(rows.length, acknowledged.length);
    assert.deepEqual(new Set(rows.map((r) => r.anonymous_id)), new Set(acknowledged));
  });

  it("nothing is half-written: the stored inbox converges to the provider's, without duplicates", async (t) => {
    const stuck = await sql(dbUrl, 'select account_id from sync_states where lease_until > now()');
    t.diagnostic(
      `leases still held after recovery: ${stuck.length}; release failures logged: ${svc.logs.filter((l) => l.msg === 'releasing the sync lease failed').length}`,
    );
    // A sync cut off by the outage could not release its lease; it expires by itself (up to
    // LEASE_SECONDS later). Simulate the expiry rather than wait for it.
    await sql(dbUrl, "update sync_states set lease_until = now() - interval '1 second' where lease_until is not null");
    const synced = await eventually(
      async () => {
        const res = await alice.fetch('/api/mail/sync', {
          method: 'POST',
          headers: { ...csrf(aliceCsrf), 'X-Forwarded-For': '10.9.9.9' },
        });
        return res.status === 200 && !(await res.json()).hasMore;
      },
      20_000,
      250,
    );
    assert.ok(synced, 'a sync after the outage completes');
    const rows = await accountRows(ALICE.email);
    const ids = rows.map((r) => r.provider_message_id);
    assert.equal(new Set(ids).size, ids.length, 'no message stored twice');
    const inbox = providers.gmail.inbox(ALICE.email).map((m) => m.id);
    assert.deepEqual(new Set(rows.filter((r) => r.in_inbox).map((r) => r.provider_message_id)), new Set(inbox));
    const orphans = await sql(
      dbUrl,
      'select t.id from mail_threads t where not exists (select 1 from mail_messages m where m.thread_id = t.id)',
    );
    assert.deepEqual(orphans, [], 'no thread without messages');
    const readState = async () =>
      (
        await sql<{ history_id: string; full_sync_active: boolean; lease_owner: string | null }>(
          dbUrl,
          'select s.history_id::text, s.full_sync_active, s.lease_owner from sync_states s join accounts a on a.id = s.account_id where a.email = $1',
          [ALICE.email],
        )
      )[0]!;
    // A background job (a retry of one the outage failed) may be syncing the account now: its
    // lease goes when it ends. A lease left behind stays (its expiry does not clear the owner).
    assert.ok(
      await eventually(async () => (await readState()).lease_owner === null, 20_000, 250),
      `no sync lease left behind (${(await readState()).lease_owner})`,
    );
    const state = await readState();
    assert.equal(state.full_sync_active, false);
    assert.ok(BigInt(state.history_id) <= BigInt(providers.gmail.historyId(ALICE.email)));
  });

  it('a notification that arrived while the database was down is still synced by the background jobs', async () => {
    const arrived = await eventually(
      async () => (await accountRows(BOB.email)).some((r) => r.provider_message_id === bobMessageId),
      RECOVERY_BOUND_MS,
      250,
    );
    assert.ok(arrived, "bob's new message reached the store without a sync call");
  });

  it('a shutdown that catches rate-limit queries in flight does not crash the process either', async () => {
    // Hold the rate-limit rows of three clients, so that their next requests wait inside the
    // rate limiter's query (its pool client checked out) when the cluster goes away.
    const ips = ['10.66.0.1', '10.66.0.2', '10.66.0.3'];
    for (const ip of ips)
      assert.equal(
        (await fetch(`${svc.url}/api/status/incidents`, { headers: { 'X-Forwarded-For': ip } })).status,
        200,
      );
    const locker = new pg.Client({ connectionString: dbUrl });
    locker.on('error', () => undefined);
    await locker.connect();
    await locker.query('begin');
    const locked = await locker.query(`select key from rate_limits where key like '%10.66.0.%' for update`);
    assert.equal(locked.rowCount, 3);
    const pending = ips.map((ip) =>
      fetch(`${svc.url}/api/status/incidents`, {
        headers: { 'X-Forwarded-For': ip },
        signal: AbortSignal.timeout(10_000),
      }).then(
        (r) => r.status,
        (e: Error) => e.message,
      ),
    );
    await sleep(300);
    await cluster.stop();
    try {
      const answers = await Promise.all(pending);
      // Each answer is the outage's 503, or a 200 for a request that got through before the
      // stop (seen once in CI): never a 500, a hang or a dropped connection.
      for (const a of answers) assert.ok(a === 503 || a === 200, `answered ${a}`);
      assert.ok(answers.includes(503), `some request met the outage: ${answers.join(', ')}`);
      await sleep(300);
      assert.equal(svc.alive, true, `the process survived (${svc.stderr.slice(0, 3).join(' | ')})`);
    } finally {
      await cluster.start();
    }
    assert.ok(await eventually(async () => (await fetch(`${svc.url}/health`)).status === 200, RECOVERY_BOUND_MS, 100));
  });

  it('the process never crashed and answered no request with INTERNAL_ERROR', async () => {
    assert.equal(svc.alive, true);
    assert.deepEqual(
      svc.stderr.filter((l) => /uncaught|unhandled|Error/i.test(l)),
      [],
    );
    assert.deepEqual(
      svc.logs.filter((l) => l.msg === 'request failed' && l.code === 'INTERNAL_ERROR').map((l) => l.errMessage),
      [],
    );
    assert.deepEqual(
      svc.logs.filter((l) => l.msg === 'request' && Number(l.status) === 500).map((l) => l.path),
      [],
    );
    assert.equal((await fetch(`${svc.url}/health`)).status, 200);
  });
});
