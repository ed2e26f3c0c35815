/**
 * The model-based proof of the live inbox: random schedules of provider-side changes (new,
 * deleted, read/unread, moved out of and back into the inbox; history label records with or
 * without the message's labels, as the provider may send them), their change notifications
 * duplicated, reordered, delayed or dropped, history expiry, injected provider and queue
 * faults, syncs interrupted half-way (a fault part-way through the fetches, a crashed holder
 * of the account's lease, a lease lost to another instance before the commit, the mailbox
 * changing between the history read and the fetch), two intakes on one queue, two workers on
 * one job queue and the sync route racing the workers — all run against the real intake, job
 * engine (pg-boss), mail-sync worker, sync service, Gmail stand-in and database.
 *
 * Checked on every schedule:
 *  - after every step: the checkpoint never moves backwards; no notification is acknowledged
 *    before a sync job of its account was asked for after its delivery (stored, or one already
 *    waiting), unless the committed checkpoint its intake read already covered it;
 *  - at the end every notification is acknowledged and no job is left; when the last change's
 *    notification was delivered, the service's own jobs made the stored inbox equal to the
 *    provider's, with no further notification and no sweep;
 *  - after the service's own quiet-account sweep (the account's notifications stopped long
 *    ago) and its jobs, the stored inbox equals the provider's exactly: no missing, no extra,
 *    no duplicate rows, same read state and labels, the thread list shows exactly the
 *    provider's inbox threads.
 *
 * Jobs are taken from the engine by the schedule (`work` steps: pg-boss fetch, the worker's
 * run, complete or fail), so that which instance works when is the schedule's to choose; a
 * job deferred (busy lease, quota, retry backoff) is taken early only where the schedule says
 * time has passed. fast-check prints the seed and path of a failing schedule (and the shrunk
 * schedule); replay with MODEL_SEED=<seed> MODEL_PATH=<path>. MODEL_RUNS sets the number of
 * schedules (default 250); MODEL_DEBUG=1 logs the schedules' syncs to the app log.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { JobWithMetadata } from 'pg-boss';
import { createSyncService, type SyncService } from '../../../server/domain/mail/sync/sync.service.ts';
import { createNotificationIntake, notificationAccounts, type NotificationIntake } from '../../../server/intake/notifications.ts';
import { QUEUES, type SyncRequest } from '../../../server/jobs/engine.ts';
import { createMailSyncWorker } from '../../../server/jobs/mail-sync.job.ts';
import type { GmailApi, GmailFactory } from '../../../server/providers/gmail.ts';
import { createLogger } from '../../../server/infra/logger.ts';
import type { TestApp } from '../../helpers/app.ts';
import type { FaultEndpoint, GmailStandIn } from '../../../stand-ins/gmail.stand-in.ts';
import { ModelQueue, TICK_MS, type QueueMethod } from './model-queue.ts';
import {
  assertInboxMatches as assertModelInbox,
  checkpoint as modelCheckpoint,
  createModelAccount,
  modelSql,
  startModelApp,
  storedInbox as storedModelInbox,
  type ModelWorld,
} from './model-world.ts';

const RUNS = Number(process.env.MODEL_RUNS ?? 250);
const SEED = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);
const PATH = process.env.MODEL_PATH;
const TOKEN_PREFIX = 'model-token:';

// ------------------------------------------------------------------ schedule

type Change =
  | { kind: 'add'; inbox: boolean; unread: boolean; reply: number | null }
  | { kind: 'delete'; i: number }
  | { kind: 'read'; i: number; read: boolean }
  | { kind: 'archive'; i: number }
  | { kind: 'unarchive'; i: number };
interface Fate {
  /** 0 = the notification is lost, 2 = delivered twice. */
  copies: number;
  /** Ticks before it becomes deliverable. */
  delay: number;
}
type Op =
  | { kind: 'change'; change: Change; fate: Fate }
  | { kind: 'midSync'; change: Change; fate: Fate }
  /** A backlog: pages × this many new messages at once (1,000 with 50-message pages), then one notification. */
  | { kind: 'flood'; pages: number; fate: Fate }
  | { kind: 'poll'; instance: number; take: number; order: number }
  | { kind: 'pollBoth'; order: number }
  | { kind: 'work'; jobs: number; late: boolean }
  | { kind: 'workBoth'; late: boolean }
  | { kind: 'routeRace'; late: boolean }
  | { kind: 'tick'; n: number }
  | { kind: 'expire' }
  | { kind: 'fault'; endpoint: FaultEndpoint; status: number; afterCalls: number; times: number }
  | { kind: 'queueFault'; method: QueueMethod }
  | { kind: 'crash' }
  | { kind: 'recover' }
  | { kind: 'steal' }
  | { kind: 'resync' }
  /** The user opens a stored thread while a worker syncs: bodies fetched outside any transaction. */
  | { kind: 'open'; i: number; late: boolean }
  /** A new message the provider always fails for (until the weather clears). */
  | { kind: 'poison'; fate: Fate }
  | { kind: 'noise'; garbage: boolean; fate: Fate };

interface Schedule {
  seedCount: number;
  initialSync: boolean;
  /** maxMessages of every sync call: small pages make bounded drains and listings span calls. */
  page: number;
  rounds: number;
  batch: number;
  reportAttempts: boolean;
  /** The provider's history label records carry only the change, not the message's labels (the fold's delta branch). */
  deltaOnlyLabels: boolean;
  ops: Op[];
}

const idx = fc.nat(30);
const changeArb: fc.Arbitrary<Change> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('add' as const), inbox: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }), unread: fc.boolean(), reply: fc.option(idx, { nil: null, freq: 2 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), i: idx }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), i: idx, read: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('archive' as const), i: idx }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unarchive' as const), i: idx }) },
);
const fateArb: fc.Arbitrary<Fate> = fc.record({ copies: fc.constantFrom(1, 1, 1, 1, 0, 2, 2), delay: fc.constantFrom(0, 0, 0, 1, 2, 4) });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 7, arbitrary: fc.record({ kind: fc.constant('change' as const), change: changeArb, fate: fateArb }) },
  { weight: 7, arbitrary: fc.record({ kind: fc.constant('poll' as const), instance: fc.constantFrom(0, 0, 1), take: fc.integer({ min: 1, max: 6 }), order: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pollBoth' as const), order: fc.nat() }) },
  { weight: 7, arbitrary: fc.record({ kind: fc.constant('work' as const), jobs: fc.integer({ min: 1, max: 3 }), late: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('workBoth' as const), late: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('routeRace' as const), late: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), n: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('midSync' as const), change: changeArb, fate: fateArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('flood' as const), pages: fc.constantFrom(5, 20), fate: fateArb }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      endpoint: fc.constantFrom<FaultEndpoint>('history.list', 'messages.get', 'messages.get', 'messages.list', 'profile'),
      status: fc.constantFrom(500, 503, 429),
      afterCalls: fc.nat(2),
      times: fc.integer({ min: 1, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('queueFault' as const), method: fc.constantFrom<QueueMethod>('pull', 'ack', 'retryLater') }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'crash' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'recover' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'steal' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resync' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('open' as const), i: idx, late: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('poison' as const), fate: fateArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('noise' as const), garbage: fc.boolean(), fate: fateArb }) },
);
const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  seedCount: fc.nat(4),
  initialSync: fc.boolean(),
  page: fc.constantFrom(1, 2, 3, 50),
  rounds: fc.constantFrom(1, 2, 4),
  batch: fc.constantFrom(1, 3, 10),
  reportAttempts: fc.boolean(),
  deltaOnlyLabels: fc.boolean(),
  ops: fc.array(opArb, { minLength: 1, maxLength: 22 }),
});

// ------------------------------------------------------------------ world (one app and database for every schedule)

let app: TestApp;
let gmail: GmailStandIn;
let realGmail: GmailFactory;
/** A provider call hook, fired once right after the next history or inbox read of a hooked sync. */
let readHook: (() => Promise<void>) | null = null;

/** The real client, with a hook after the read that plans a sync (the mid-sync interruptions). */
const hookedGmail: GmailFactory = (auth) => {
  const api = realGmail(auth);
  const fire = async () => {
    const h = readHook;
    readHook = null;
    if (h) await h();
  };
  const wrapped: GmailApi = {
    get requests() {
      return api.requests;
    },
    listInbox: async (p) => {
      const r = await api.listInbox(p);
      await fire();
      return r;
    },
    listHistory: async (id) => {
      const r = await api.listHistory(id);
      await fire();
      return r;
    },
    getMetadata: (ids) => api.getMetadata(ids),
    getThreadFull: (id, each) => api.getThreadFull(id, each),
    profile: () => api.profile(),
    watch: (p) => api.watch(p),
    stop: () => api.stop(),
  };
  return wrapped;
};

const sql = <T = Record<string, unknown>>(q: string, params: unknown[] = []) => modelSql(app)<T>(q, params);
const world = (): ModelWorld => ({ app, gmail, tokenPrefix: TOKEN_PREFIX });
const createAccount = (email: string) => createModelAccount(world(), email);
const storedInbox = (accountId: string) => storedModelInbox(app, accountId);
const assertInboxMatches = (accountId: string, email: string, when: string) => assertModelInbox(world(), accountId, email, when);
const checkpoint = (accountId: string) => modelCheckpoint(app, accountId);

// ------------------------------------------------------------------ one schedule

const quiet = createLogger({ level: 'silent' });
let scheduleNo = 0;
const timings: { ms: number; s: Schedule }[] = [];

async function runSchedule(s: Schedule): Promise<void> {
  const email = `model-${++scheduleNo}-${randomUUID().slice(0, 8)}@model.test`;
  const accountId = await createAccount(email);
  const queue = new ModelQueue(s.reportAttempts);
  // The schedule's own services log nothing (hundreds of schedules); MODEL_DEBUG=1 sends them to the app's log.
  const log = process.env.MODEL_DEBUG ? app.container.log.child({ model: scheduleNo }) : quiet;
  const violations: string[] = [];
  gmail.setDeltaOnlyLabels(s.deltaOnlyLabels);
  try {
    const syncs: SyncService = createSyncService({ orm: app.container.orm, gmail: hookedGmail, credentials: app.container.credentials, log });
    const competitor: SyncService = createSyncService({ orm: app.container.orm, gmail: realGmail, credentials: app.container.credentials, log });
    const page = { maxMessages: s.page };
    const engine = app.container.liveInbox.engine;

    // Per intake instance: how many sync jobs it asked for, per account (stored, or covered by one waiting).
    const asked = [new Map<string, number>(), new Map<string, number>()];
    // Per intake instance: the highest checkpoint its account lookups reported as committed and complete
    // (a notification at or below it may be acknowledged without a job: its change is stored).
    const coveredThrough = [-1n, -1n];
    const accounts = notificationAccounts(app.container.orm);
    const intakes: NotificationIntake[] = [0, 1].map((instance) =>
      createNotificationIntake({
        queue,
        log,
        ...accounts,
        async resolveAccount(address) {
          const found = await accounts.resolveAccount(address);
          if (found?.syncedThrough && BigInt(found.syncedThrough) > coveredThrough[instance]!) coveredThrough[instance] = BigInt(found.syncedThrough);
          return found;
        },
        engine: {
          async enqueueSync(request, opts) {
            const stored = await engine.enqueueSync(request, opts);
            asked[instance]!.set(request.accountId, (asked[instance]!.get(request.accountId) ?? 0) + 1);
            return stored;
          },
        },
        batchSize: s.batch,
      }),
    );
    // The schedule's worker: the real one, on the hooked sync service with the schedule's page size.
    const worker = createMailSyncWorker({
      orm: app.container.orm,
      engine,
      sync: { syncAccount: (id, opts) => syncs.syncAccount(id, { ...opts, ...page }) },
      log,
      callsPerJob: s.rounds,
    });
    /** Takes up to `n` ready jobs (or deferred ones too, when time has passed) and works them as pg-boss's work() would. */
    const work = async (n: number, late: boolean): Promise<number> => {
      const jobs = (await engine.boss.fetch<SyncRequest>(QUEUES.mailSync, { batchSize: n, includeMetadata: true, ignoreStartAfter: late })) as JobWithMetadata<SyncRequest>[];
      for (const job of jobs) {
        try {
          await worker.run(job);
          await engine.boss.complete(QUEUES.mailSync, job.id);
        } catch (err) {
          if (process.env.MODEL_DEBUG) process.stdout.write(`# job failed ${String((err as Error).stack)}\n`);
          await engine.boss.fail(QUEUES.mailSync, job.id, { message: String((err as Error).message) });
        }
      }
      return jobs.length;
    };
    const deliveredTo = new Map<string, { instance: number; askedBefore: number }>();
    let pollingInstance = 0;
    const onDeliverOf = (instance: number) => (_m: unknown, ackId: string) => deliveredTo.set(ackId, { instance, askedBefore: asked[instance]!.get(accountId) ?? 0 });
    queue.onDeliver = (m, ackId) => onDeliverOf(pollingInstance)(m, ackId);
    queue.onAck = ({ message, ackId }) => {
      let body: { emailAddress?: string; historyId?: string } | undefined;
      try {
        body = JSON.parse(message.data.toString('utf8'));
      } catch {
        return;
      }
      if (body?.emailAddress !== email) return;
      const d = deliveredTo.get(ackId)!;
      const now = asked[d.instance]!.get(accountId) ?? 0;
      const covered = body.historyId !== undefined && BigInt(body.historyId) <= coveredThrough[d.instance]!;
      if (now <= d.askedBefore && !covered) violations.push(`message ${message.messageId} (step ${message.step}) acknowledged by instance ${d.instance} before a sync job was asked for after its delivery`);
    };

    // Provider side.
    for (let i = 0; i < s.seedCount; i++) gmail.addMessage(email, { subject: `seed ${i}`, read: i % 2 === 0 });
    let mutations = 0;
    let lastMutation = 0;
    const delivered = new Set<number>();
    let step = 0;
    const notify = (mutation: number, fate: Fate) => {
      for (let c = 0; c < fate.copies; c++) queue.publish({ emailAddress: email, historyId: String(gmail.historyId(email)) }, step, fate.delay + c);
      if (fate.copies > 0) delivered.add(mutation);
    };
    const applyChange = (change: Change, fate: Fate) => {
      const all = gmail.messages(email);
      const pick = (i: number) => all[i % all.length]!;
      const before = gmail.historyId(email);
      if (change.kind === 'add') {
        const thread = change.reply !== null && all.length ? pick(change.reply).threadId : undefined;
        gmail.addMessage(email, {
          ...(thread ? { threadId: thread } : {}),
          labelIds: change.inbox ? ['INBOX', 'CATEGORY_PERSONAL'] : ['SENT'],
          read: !change.unread,
        });
      } else if (!all.length) return;
      else if (change.kind === 'delete') gmail.deleteMessage(email, pick(change.i).id);
      else if (change.kind === 'read') gmail.setRead(email, pick(change.i).id, change.read);
      else if (change.kind === 'archive') gmail.archive(email, pick(change.i).id);
      else gmail.moveToInbox(email, pick(change.i).id);
      if (gmail.historyId(email) === before) return; // nothing changed: the provider sends nothing
      lastMutation = ++mutations;
      notify(lastMutation, fate);
    };

    if (s.initialSync) {
      for (let i = 0; i < 50 && (await syncs.syncAccount(accountId, page)).hasMore; i++);
    }

    let highest = await checkpoint(accountId);
    const afterStep = async (what: string) => {
      const c = await checkpoint(accountId);
      if (highest !== null) assert.ok(c !== null && c >= highest, `${what}: checkpoint moved backwards (${highest} -> ${c})`);
      if (c !== null) highest = c;
      assert.deepEqual(violations, [], what);
    };
    const swallow = (p: Promise<unknown>) => p.catch(() => undefined);
    const poll = async (instance: number) => {
      pollingInstance = instance;
      await swallow(intakes[instance]!.runOnce());
    };

    for (const op of s.ops) {
      step++;
      switch (op.kind) {
        case 'change':
          applyChange(op.change, op.fate);
          break;
        case 'midSync':
          readHook = async () => applyChange(op.change, op.fate);
          break;
        case 'flood':
          for (let i = 0; i < op.pages * s.page; i++) gmail.addMessage(email, { subject: `flood ${step}.${i}`, read: i % 3 === 0 });
          lastMutation = ++mutations;
          notify(lastMutation, op.fate);
          break;
        case 'poll':
          queue.nextPull = { order: op.order, take: op.take };
          await poll(op.instance);
          break;
        case 'pollBoth':
          // Two intakes on one subscription at once; each delivery is attributed to the instance that pulled it.
          queue.nextPull = { order: op.order, take: Infinity };
          queue.onDeliver = onDeliverOf(0);
          {
            const first = intakes[0]!.runOnce();
            queue.onDeliver = onDeliverOf(1);
            const second = intakes[1]!.runOnce();
            await Promise.all([swallow(first), swallow(second)]);
          }
          queue.onDeliver = (m, ackId) => onDeliverOf(pollingInstance)(m, ackId);
          break;
        case 'work':
          await work(op.jobs, op.late);
          break;
        case 'workBoth':
          // Two instances' workers at once: the engine hands each job to one of them.
          await Promise.all([work(1, op.late), work(1, op.late)]);
          break;
        case 'routeRace':
          // The sync route and a worker on the same account at the same time: one of them is refused, nothing overlaps.
          await Promise.all([swallow(syncs.syncAccount(accountId, page)), work(1, op.late)]);
          break;
        case 'tick':
          queue.advance(op.n * TICK_MS);
          break;
        case 'expire':
          gmail.expireHistory(email);
          break;
        case 'fault':
          gmail.injectFault({ endpoint: op.endpoint, status: op.status, afterCalls: op.afterCalls, times: op.times });
          break;
        case 'queueFault':
          queue.inject(op.method);
          break;
        case 'crash':
          // A sync whose process died holding the account's lease.
          await sql(
            `insert into sync_states as s (account_id, lease_owner, lease_until) values (?, 'crashed', now() + interval '1 hour')
             on conflict (account_id) do update set lease_owner = 'crashed', lease_until = now() + interval '1 hour'`,
            [accountId],
          );
          break;
        case 'recover':
          await sql(`update sync_states set lease_until = now() - interval '1 second' where account_id = ? and lease_owner = 'crashed'`, [accountId]);
          break;
        case 'steal':
          // The next hooked sync outlives its lease: another instance takes over and commits first.
          readHook = async () => {
            await sql(`update sync_states set lease_until = now() - interval '1 second' where account_id = ?`, [accountId]);
            await swallow(competitor.syncAccount(accountId, page));
          };
          break;
        case 'resync':
          await swallow(syncs.syncAccount(accountId, { ...page, fullResync: true }));
          break;
        case 'open': {
          const threads = await sql<{ id: string }>('select id from mail_threads where account_id = ? order by id', [accountId]);
          if (!threads.length) break;
          const thread = threads[op.i % threads.length]!.id;
          await Promise.all([swallow(app.container.threadBodies.ensure(app.container.orm.em.fork(), accountId, thread)), work(1, op.late)]);
          break;
        }
        case 'poison': {
          const m = gmail.addMessage(email, { subject: `poison ${step}` });
          gmail.injectFault({ endpoint: 'messages.get', status: 500, pathIncludes: m.id, times: Infinity });
          lastMutation = ++mutations;
          notify(lastMutation, op.fate);
          break;
        }
        case 'noise':
          for (let c = 0; c < op.fate.copies; c++) {
            queue.publish(op.garbage ? 'not json at all' : { emailAddress: 'nobody@model.test', historyId: '1' }, step, op.fate.delay);
          }
          break;
      }
      await afterStep(`step ${step} (${op.kind})`);
    }

    // The weather clears: faults end, a crashed holder's lease runs out (as a dead holder's does),
    // late notifications arrive, and time passes: every deferred job comes due.
    readHook = null;
    gmail.clearFaults();
    queue.clearFaults();
    await sql(`update sync_states set lease_until = now() - interval '1 second' where account_id = ? and lease_owner = 'crashed'`, [accountId]);
    for (const m of queue.messages) m.visibleAt = Math.min(m.visibleAt, queue.now);
    pollingInstance = 0;
    const settle = async (what: string) => {
      // Time passes: set-aside messages come due for their retry, as hours would make them.
      await sql('update mail_set_aside set retry_after = now() where account_id = ?', [accountId]);
      for (let round = 0; round < 200; round++) {
        queue.advance(15 * 60_000); // every ack deadline has run out
        const taken = await intakes[0]!.runOnce();
        const worked = await work(5, true);
        if (process.env.MODEL_DEBUG) process.stdout.write(`# settle ${round} taken ${taken} worked ${worked} rows ${(await storedInbox(accountId)).length} jobs ${JSON.stringify((await engine.boss.findJobs<SyncRequest>(QUEUES.mailSync, { key: accountId })).map((j) => [j.state, j.data.reason, j.startAfter]))}\n`);
        if (taken === 0 && worked === 0 && queue.pending().length === 0) return;
      }
      assert.fail(`${what}: the jobs did not settle`);
    };
    await settle('after the schedule');
    await afterStep('final jobs');
    assert.deepEqual(queue.pending().map((m) => m.messageId), [], 'every notification is eventually acknowledged');
    assert.equal(await engine.count(QUEUES.mailSync, ['created', 'retry', 'active'], accountId), 0, 'no job left');

    // Without any sweep, the service's jobs alone converge when the last change was notified
    // (and no job of the account ran out of its retries: that one waits for the sweep).
    const setAside = (await sql<{ dead_lettered_at: Date | null }>('select dead_lettered_at from sync_states where account_id = ?', [accountId]))[0]?.dead_lettered_at;
    const messagesAside = (await sql('select 1 from mail_set_aside where account_id = ?', [accountId])).length;
    const notifiedLast = lastMutation === 0 ? s.initialSync || s.seedCount === 0 : delivered.has(lastMutation);
    if (notifiedLast && !setAside && !messagesAside) await assertInboxMatches(accountId, email, 'after the notifications');

    // The account's notifications stopped long ago (and set-aside messages came due): the
    // service's own quiet-account sweep, and its jobs.
    await sql(
      `update sync_states set last_synced_at = now() - interval '7 hours', last_notification_at = now() - interval '7 hours',
         updated_at = now() - interval '7 hours' where account_id = ?`,
      [accountId],
    );
    await sql('update mail_set_aside set retry_after = now() where account_id = ?', [accountId]);
    const sweep = await app.container.liveInbox.scheduled['quiet-sweep']();
    assert.ok(sweep.stale.includes(accountId), 'the sweep finds the account whose notifications stopped');
    await settle('after the sweep');
    await afterStep('final sweep');
    await assertInboxMatches(accountId, email, 'after the final sweep');
  } finally {
    readHook = null;
    gmail.clearFaults();
    gmail.setDeltaOnlyLabels(false);
    await sql('delete from accounts where id = ?', [accountId]);
    await app.container.liveInbox.engine.boss.deleteAllJobs(QUEUES.mailSync);
    await app.container.liveInbox.engine.boss.deleteAllJobs(QUEUES.mailSyncDeadLetter);
  }
}

// ------------------------------------------------------------------ the test

describe('live inbox model', () => {
  let close: () => Promise<void>;
  before(async () => {
    ({ app, gmail, realGmail, close } = await startModelApp(TOKEN_PREFIX, 7));
  });

  after(() => close());

  it(`random schedules converge: stored inbox == provider inbox (${RUNS} schedules)`, async () => {
    const started = Date.now();
    const seed = SEED ?? (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) | 0;
    process.stdout.write(`# live-model: seed ${seed} (replay with MODEL_SEED=${seed}; fast-check adds the path of a failure)\n`);
    await fc.assert(
      fc.asyncProperty(scheduleArb, async (s) => {
        const t0 = Date.now();
        await runSchedule(s);
        if (process.env.MODEL_DEBUG) timings.push({ ms: Date.now() - t0, s });
      }),
      { numRuns: RUNS, seed, ...(PATH ? { path: PATH } : {}), verbose: 1 },
    );
    // Schedules per run and their cost, for the report.
    process.stdout.write(`# live-model: ${scheduleNo} schedules in ${Date.now() - started} ms\n`);
    if (process.env.MODEL_DEBUG) for (const x of timings.sort((a, b) => b.ms - a.ms).slice(0, 5)) process.stdout.write(`# slow ${x.ms} ms ${JSON.stringify(x.s)}\n`);
  });
});
