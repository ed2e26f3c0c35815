/**
 * The service process killed with SIGKILL in the middle of a sync — one started by the
 * sync route (on HTTP-only instances, BACKGROUND_WORKERS=false), and one a background job
 * runs — then started again on the same database: the stored inbox ends up complete,
 * without duplicates, with a consistent checkpoint, and the dead process's job is run again.
 *
 * A killed process cannot release its sync lease (sync_states.lease_until). It is short
 * (SYNC_LEASE_SECONDS, 15 s by default, kept alive by its holder while it works), so the dead
 * holder lets go within seconds; until then the restarted service refuses a second sync of the
 * account (RATE_LIMITED, spec part 8: never two overlapping syncs) — the safe answer, since an
 * instance cannot tell a dead lease holder from a live one on another machine. The route
 * tests run with a lease that outlives the restart, check that refusal, then move the expiry
 * into the past in SQL; the job test lets a 5 s lease lapse by itself, and the engine hands the
 * dead process's job on once its heartbeat (10 s, pg-boss's least) lapsed, supervising every
 * second (JOB_SUPERVISE_SECONDS) rather than every 10.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';
import { csrf, signIn } from '../../../harness/client.ts';
import { sql } from '../../../harness/pg-cluster.ts';
import { type ServiceProcess, sharedSecrets, startServiceProcess } from '../../../harness/service-process.ts';
import { type StandIns, startStandIns, SUBSCRIPTION, user } from '../../../harness/stand-ins.ts';
import { eventually } from '../../../harness/wait.ts';

const ALICE = user('alice');
/** The background scenario's sync lease (SYNC_LEASE_SECONDS, 15 s by default): short, so its expiry is not waited out. */
const JOB_LEASE_SECONDS = 5;

interface Ctx {
  db: TestDatabase;
  providers: StandIns;
  env: Record<string, string>;
}

async function setup(t: { after(fn: () => unknown): void }, extraEnv: Record<string, string>): Promise<Ctx> {
  const db = await createTestDatabase();
  const providers = await startStandIns({ users: [ALICE], ackDeadlineSeconds: 2 });
  t.after(async () => {
    await providers.close();
    await db.drop();
  });
  return { db, providers, env: { ...providers.env, ...sharedSecrets(), TRUST_PROXY: 'true', ...extraEnv } };
}

async function stored(url: string) {
  return sql<{ provider_message_id: string; in_inbox: boolean }>(
    url,
    'select provider_message_id, in_inbox from mail_messages',
  );
}

async function syncState(url: string) {
  const [s] = await sql<{
    history_id: string | null;
    full_sync_page_token: string | null;
    full_sync_active: boolean;
    lease_owner: string | null;
    lease_until: Date | null;
    last_synced_at: Date | null;
  }>(
    url,
    'select history_id::text, full_sync_page_token, full_sync_active, lease_owner, lease_until, last_synced_at from sync_states',
  );
  return s!;
}

/**
 * A describe block's world: its own database and stand-ins before its tests; after them its
 * service processes killed (whichever were started) and everything else torn down.
 */
function scenario(
  use: (ctx: Ctx) => void,
  processes: () => (ServiceProcess | undefined)[],
  env: Record<string, string>,
): void {
  const cleanups: (() => unknown)[] = [];
  before(async () => {
    use(await setup({ after: (fn) => cleanups.push(fn) }, env));
  });
  after(async () => {
    for (const p of processes()) await p?.kill();
    for (const fn of cleanups.reverse()) await fn();
  });
}

/** The killed instance's lease is left to expire: move it into the past. */
const expireLeases = (url: string) =>
  sql(url, "update sync_states set lease_until = now() - interval '1 second' where lease_until is not null");

/** The store equals the provider's inbox exactly, without duplicates, and the checkpoint is settled. */
async function assertConsistent(ctx: Ctx) {
  const rows = await stored(ctx.db.url);
  const ids = rows.map((r) => r.provider_message_id);
  assert.equal(new Set(ids).size, ids.length, 'no duplicates');
  const inbox = ctx.providers.gmail.inbox(ALICE.email).map((m) => m.id);
  assert.deepEqual(
    new Set(rows.filter((r) => r.in_inbox).map((r) => r.provider_message_id)),
    new Set(inbox),
    'the stored inbox is the provider inbox',
  );
  const dup = await sql(
    ctx.db.url,
    'select provider_thread_id from mail_threads group by account_id, provider_thread_id having count(*) > 1',
  );
  assert.deepEqual(dup, [], 'no thread stored twice');
  const orphans = await sql(
    ctx.db.url,
    'select id from mail_threads t where not exists (select 1 from mail_messages m where m.thread_id = t.id)',
  );
  assert.deepEqual(orphans, [], 'no thread without messages');
  const state = await syncState(ctx.db.url);
  assert.equal(state.full_sync_active, false, 'no listing left half-way');
  assert.equal(state.full_sync_page_token, null);
  assert.equal(state.lease_owner, null, 'no lease held');
  assert.ok(
    state.history_id && BigInt(state.history_id) <= BigInt(ctx.providers.gmail.historyId(ALICE.email)),
    'checkpoint not ahead of the provider',
  );
}

// The two scenarios are independent (own database, stand-ins and processes): run them side by side.
describe('SIGKILL mid-sync', { concurrency: true }, () => {
  describe('SIGKILL in the middle of a sync started by the route', { concurrency: false }, () => {
    let ctx: Ctx;
    let first: ServiceProcess;
    let second: ServiceProcess;
    let browser: ReturnType<ServiceProcess['browser']>;
    let token: string;
    // A lease that outlives the restart (the refusal is under test), expired in SQL afterwards.
    scenario(
      (c) => (ctx = c),
      () => [first, second],
      { SYNC_LEASE_SECONDS: '120' },
    );

    it('kills the process while the second page of a full sync is being fetched', async () => {
      // Without PUBSUB_SUBSCRIPTION nor workers: only the route syncs.
      const { PUBSUB_SUBSCRIPTION: _, ...rest } = ctx.env;
      const env = { ...rest, BACKGROUND_WORKERS: 'false' };
      first = await startServiceProcess(null, { databaseUrl: ctx.db.url, env, name: 'first' });
      browser = first.browser();
      token = (await signIn(browser)).csrfToken;
      ctx.providers.gmail.seed(ALICE.email, 130, { sentReplies: false });
      const one = await browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(token) });
      assert.equal(one.status, 200);
      assert.deepEqual(await one.json().then((b) => [b.messagesSynced, b.hasMore]), [50, true]);

      ctx.providers.gmail.setLatency(60);
      const gets = ctx.providers.gmail.calls['messages.get'] ?? 0;
      const pending = browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(token) }).then(
        (r) => `answered ${r.status}`,
        (e: Error) => `failed: ${e.message}`,
      );
      assert.ok(
        await eventually(async () => (ctx.providers.gmail.calls['messages.get'] ?? 0) >= gets + 15, 10_000, 10),
        'the second call is fetching messages',
      );
      await first.kill();
      assert.match(await pending, /^failed/, 'the client saw the connection die, not an answer');
      ctx.providers.gmail.setLatency(0);

      // Nothing of the interrupted call was written; the first page and its cursor are intact.
      assert.equal((await stored(ctx.db.url)).length, 50);
      const state = await syncState(ctx.db.url);
      assert.equal(state.full_sync_active, true);
      assert.ok(state.full_sync_page_token, 'the listing cursor of the committed first page');
      assert.ok(state.lease_owner, 'the dead process still holds the lease');
      assert.ok(state.lease_until && new Date(state.lease_until).getTime() > Date.now());
    });

    it('after a restart the session still works, and the dead lease refuses a second sync until it expires', async () => {
      const env = {
        ...Object.fromEntries(Object.entries(ctx.env).filter(([k]) => k !== 'PUBSUB_SUBSCRIPTION')),
        BACKGROUND_WORKERS: 'false',
      };
      second = await startServiceProcess(null, { databaseUrl: ctx.db.url, env, name: 'second', port: first.port });
      const session = await (await browser.fetch('/auth/session')).json();
      assert.equal(session.authenticated, true, 'sessions live in the database: they survive the crash');
      const refused = await browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(token) });
      assert.equal(refused.status, 429);
      assert.equal((await refused.json()).error.code, 'RATE_LIMITED');
      assert.match(refused.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    });

    it('once the lease has expired, syncing resumes from the cursor and completes the inbox without duplicates', async () => {
      await expireLeases(ctx.db.url);
      // Meanwhile new mail arrived upstream, and some was archived.
      const fresh = ctx.providers.gmail.addMessage(ALICE.email, { subject: 'after the crash' });
      ctx.providers.gmail.archive(ALICE.email, ctx.providers.gmail.inbox(ALICE.email)[5]!.id);
      ctx.providers.gmail.resetCounters();
      const steps: number[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(token) });
        assert.equal(res.status, 200);
        const body = await res.json();
        steps.push(body.messagesSynced);
        if (!body.hasMore) break;
      }
      // The listing read all the inbox's ids in its first call (500 a page) and kept them: resumed,
      // it lists nothing again and only fetches what the first call did not store. Starting over
      // would read the profile and list the inbox anew.
      const { calls } = ctx.providers.gmail;
      assert.deepEqual(
        { profile: calls.profile, 'messages.list': calls['messages.list'] },
        { profile: 0, 'messages.list': 0 },
        'the listing continued from its cursor, it did not start over',
      );
      await assertConsistent(ctx);
      assert.ok((await stored(ctx.db.url)).some((r) => r.provider_message_id === fresh.id));
      const again = await (await browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(token) })).json();
      assert.equal(again.messagesSynced, 0, 'the checkpoint is current: nothing left to do');
      assert.equal((await syncState(ctx.db.url)).history_id, String(ctx.providers.gmail.historyId(ALICE.email)));
    });

    it('SIGTERM, unlike SIGKILL, lets the sync in flight finish and commit, then exits 0 without a lease left behind', async () => {
      for (let i = 0; i < 5; i++) ctx.providers.gmail.addMessage(ALICE.email, { subject: `before the stop ${i}` });
      ctx.providers.gmail.setLatency(150);
      const history = ctx.providers.gmail.calls['history.list'] ?? 0;
      const pending = browser
        .fetch('/api/mail/sync', { method: 'POST', headers: csrf(token) })
        .then(async (r) => ({ status: r.status, body: await r.json() }));
      assert.ok(
        await eventually(async () => (ctx.providers.gmail.calls['history.list'] ?? 0) > history, 5_000, 5),
        'the sync is running',
      );
      const exit = await second.stop();
      ctx.providers.gmail.setLatency(0);
      const answered = await pending;
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.equal(answered.body.messagesSynced, 5);
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.ok(
        second.logs.some((l) => l.msg === 'stopped'),
        'the shutdown ran to its end',
      );
      await assertConsistent(ctx);
    });
  });

  describe('SIGKILL in the middle of a background sync job', { concurrency: false }, () => {
    let ctx: Ctx;
    let first: ServiceProcess;
    let second: ServiceProcess;
    let total = 0;
    let partial = 0;
    let killedAt: Date;
    let deadLeaseUntil: Date;
    scenario(
      (c) => (ctx = c),
      () => [first, second],
      { SYNC_LEASE_SECONDS: String(JOB_LEASE_SECONDS), JOB_SUPERVISE_SECONDS: '1' },
    );

    it('kills the process while a job is between two committed batches of new mail', async () => {
      first = await startServiceProcess(null, { databaseUrl: ctx.db.url, env: ctx.env, name: 'first' });
      const browser = first.browser();
      await signIn(browser);
      ctx.providers.gmail.seed(ALICE.email, 10, { sentReplies: false });
      assert.ok(
        await eventually(async () => (await stored(ctx.db.url)).length === 10, 10_000),
        'the sign-in backfill and the notifications stored the inbox',
      );

      ctx.providers.gmail.setLatency(80);
      // 140 new messages, one notification each: one job drains them 50 per committed call.
      for (let i = 0; i < 140; i++) ctx.providers.gmail.addMessage(ALICE.email, { subject: `burst ${i}` });
      total = ctx.providers.gmail.inbox(ALICE.email).length;
      assert.ok(
        await eventually(async () => (await stored(ctx.db.url)).length >= 60, 20_000, 10),
        'the job committed a first batch',
      );
      const gets = ctx.providers.gmail.calls['messages.get'] ?? 0;
      assert.ok(
        await eventually(async () => (ctx.providers.gmail.calls['messages.get'] ?? 0) >= gets + 15, 10_000, 5),
        'the next batch is being fetched',
      );
      await first.kill();
      killedAt = new Date();
      ctx.providers.gmail.setLatency(0);
      partial = (await stored(ctx.db.url)).length;
      assert.ok(partial < total, `killed half-way (${partial} of ${total} stored)`);
      const state = await syncState(ctx.db.url);
      assert.equal(state.full_sync_active, false, 'incremental: the checkpoint is a history id');
      assert.ok(state.lease_owner && state.lease_until, 'the dead process still holds the lease');
      deadLeaseUntil = new Date(state.lease_until);
      assert.ok(
        deadLeaseUntil.getTime() - Date.now() <= (JOB_LEASE_SECONDS + 1) * 1000,
        'a short lease: the dead holder lets go within seconds',
      );
      const [job] = await sql<{ n: number }>(
        ctx.db.url,
        "select count(*)::int as n from pgboss.job where name = 'mail-sync' and state in ('active', 'created', 'retry')",
      );
      assert.ok(job!.n >= 1, 'the job is kept in the database, not lost with the process');
    });

    it('after a restart nothing overlaps the dead sync; once its lease lapses the jobs complete the inbox without duplicates', async () => {
      second = await startServiceProcess(null, { databaseUrl: ctx.db.url, env: ctx.env, name: 'second' });
      const late = ctx.providers.gmail.addMessage(ALICE.email, { subject: 'after the restart' });
      total += 1;
      const done = await eventually(async () => (await stored(ctx.db.url)).length === total, 60_000, 250);
      assert.ok(done, `all ${total} messages stored, the late one included, with no SQL help`);
      assert.ok((await stored(ctx.db.url)).some((r) => r.provider_message_id === late.id));
      const [overlap] = await sql<{ n: number }>(
        ctx.db.url,
        'select count(*)::int as n from mail_messages where created_at > $1 and created_at < $2',
        [killedAt, deadLeaseUntil],
      );
      assert.equal(overlap!.n, 0, 'nothing was stored while the dead process held the lease');
      assert.ok(
        await eventually(async () => ctx.providers.pubsub.stats(SUBSCRIPTION).available === 0, 15_000),
        'no deliverable notification left unhandled',
      );
      assert.ok(
        await eventually(async () => (await syncState(ctx.db.url)).lease_owner === null, 10_000),
        'no lease held',
      );
      await assertConsistent(ctx);
      assert.equal(
        (await syncState(ctx.db.url)).history_id,
        String(ctx.providers.gmail.historyId(ALICE.email)),
        "the checkpoint is the provider's current history id",
      );
      assert.equal(second.alive, true);
    });
  });
});
