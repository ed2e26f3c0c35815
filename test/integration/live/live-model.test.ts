/**
 * The model-based proof of the live inbox: random schedules (live-model-schedule.ts) of
 * provider-side changes (new, deleted, read/unread, moved out of and back into the inbox;
 * history label records with or without the message's labels, as the provider may send them),
 * their change notifications duplicated, reordered, delayed or dropped, history expiry,
 * injected provider and queue faults, syncs interrupted half-way (a fault part-way through the
 * fetches, a crashed holder of the account's lease, a lease lost before the commit to the other
 * instance's sync, a job stalled while it writes and handed to another worker, the mailbox
 * changing between the history read and the fetch), a worker loop restarted, two intakes on one
 * queue, and the sync route racing the workers — all run against the real intake, job engine
 * (pg-boss `work` on two instances of the service sharing one database: the production worker
 * loop, model-loop.ts), mail-sync worker, sync service, event streams, Gmail stand-in and
 * database, on virtual time (model-time.ts: pg-boss's own clock; a deferred job or a retry
 * comes due only when the schedule moved that much time).
 *
 * Checked on every schedule:
 *  - after every step: the checkpoint never moves backwards; no notification is acknowledged
 *    before a sync job of its account was asked for after its delivery (stored, or one already
 *    waiting), unless the committed checkpoint its intake read already covered it; no job
 *    started before its deferral or its retry's backoff had passed in virtual time; no sync
 *    ended in an internal error;
 *  - whenever the loops are idle, and at the end: the live events and the sync state agree
 *    with the model (model-state-oracle.ts: the last `sync` event an open stream heard, the
 *    sync-state service and the backlog gauge; never `catching_up` without a job, `current` at
 *    the end; the event log within its trim, a resume from a trimmed id a `reset`);
 *  - at the end every notification is acknowledged and no job is left; when the last change's
 *    notification was delivered, the service's own jobs made the stored inbox equal to the
 *    provider's, with no further notification and no sweep;
 *  - after the service's own quiet-account sweep (the account's notifications stopped long
 *    ago) and its jobs, the stored inbox equals the provider's exactly: no missing, no extra,
 *    no duplicate rows, same read state and labels, the thread list shows exactly the
 *    provider's inbox threads.
 * A big schedule (an inbox over two listing pages, its event log past its trim) runs too, and
 * must list over at least two page tokens and trim its log.
 *
 * The worker loops run beside the schedule, so a failing schedule may not replay exactly: the
 * seed and path are printed (MODEL_SEED, MODEL_PATH, for a big schedule MODEL_BIG_PATH; fast-check
 * prints the shrunk schedule).
 * MODEL_RUNS sets the number of schedules (default 100), MODEL_BIG_RUNS the big ones (default
 * 1); MODEL_DEBUG=1 logs the schedules' syncs to the app log.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import {
  createNotificationIntake,
  notificationAccounts,
  type NotificationIntake,
} from '../../../server/intake/notifications.ts';
import { QUEUES } from '../../../server/jobs/engine.ts';
import type { GmailFactory } from '../../../server/providers/gmail.ts';
import { createLogger } from '../../../server/infra/logger.ts';
import type { TestApp } from '../../helpers/app.ts';
import type { GmailStandIn } from '../../../stand-ins/gmail.stand-in.ts';
import {
  bigScheduleArb,
  PROVIDER_LISTING_PAGE,
  scheduleArb,
  type Change,
  type Fate,
  type Schedule,
} from './live-model-schedule.ts';
import {
  createModelLoop,
  forwarding,
  idleAll,
  loopTally,
  untilDue,
  type ModelLoop,
  type ReadHook,
} from './model-loop.ts';
import { ModelQueue, TICK_MS } from './model-queue.ts';
import { assertResume, assertStates, stateTally, watchStream } from './model-state-oracle.ts';
import { DeferralOracle, type ModelTime } from './model-time.ts';
import {
  assertInboxMatches,
  checkpoint,
  createModelAccount,
  modelSql,
  startModelApp,
  type ModelWorld,
} from './model-world.ts';

const RUNS = Number(process.env.MODEL_RUNS ?? 100);
const BIG_RUNS = Number(process.env.MODEL_BIG_RUNS ?? 1);
const SEED = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);
const PATH = process.env.MODEL_PATH;
const BIG_PATH = process.env.MODEL_BIG_PATH;
const TOKEN_PREFIX = 'model-token:';

let app: TestApp;
let other: TestApp;
let gmail: GmailStandIn;
let realGmail: GmailFactory;
let time: ModelTime;
const sql = <T = Record<string, unknown>>(q: string, params: unknown[] = []) => modelSql(app)<T>(q, params);
const world = (): ModelWorld => ({ app, gmail, tokenPrefix: TOKEN_PREFIX });

const quiet = createLogger({ level: 'silent' });
let scheduleNo = 0;
/** What the schedules did and what the oracles saw, over the run (printed). */
const tally = {
  takeovers: 0,
  takenOverBy: [0, 0],
  steals: 0,
  restarts: 0,
  listedPages: 0,
  deferrals: 0,
  deferredRuns: 0,
  retries: 0,
  broughtForward: 0,
  maxDeferralMs: 0,
  maxBackoffMs: 0,
};

async function runSchedule(s: Schedule): Promise<{ listedPageTokens: number; eventsSeen: number }> {
  const run = ++scheduleNo;
  const email = `model-${run}-${randomUUID().slice(0, 8)}@model.test`;
  const accountId = await createModelAccount(world(), email);
  const ids = [accountId];
  const queue = new ModelQueue(s.reportAttempts);
  const unfollow = time.follow(queue);
  // The schedule's own services log nothing (hundreds of schedules); MODEL_DEBUG=1 sends them to the app's log.
  const log = process.env.MODEL_DEBUG ? app.container.log.child({ model: run }) : quiet;
  const violations: string[] = [];
  const oracle = new DeferralOracle(time);
  const hook: ReadHook = { fn: null };
  const loops: ModelLoop[] = [app, other].map((a, instance) =>
    createModelLoop({
      app: a,
      instance,
      gmail: realGmail,
      page: s.page,
      callsPerJob: s.rounds,
      log,
      time,
      oracle,
      hook,
    }),
  );
  const watch = watchStream(app, accountId);
  await watch.opened;
  const listFrom = gmail.requests.length;
  gmail.setDeltaOnlyLabels(s.deltaOnlyLabels);
  try {
    // Per intake instance: how many sync jobs it asked for, per account (stored, or covered by one waiting).
    const asked = [new Map<string, number>(), new Map<string, number>()];
    // Per intake instance: the highest checkpoint its account lookups reported as committed and complete
    // (a notification at or below it may be acknowledged without a job: its change is stored).
    const coveredThrough = [-1n, -1n];
    const accounts = notificationAccounts(app.container.orm);
    const intakes: NotificationIntake[] = loops.map((loop, instance) => {
      const engine = forwarding(loop.engine, oracle);
      return createNotificationIntake({
        queue,
        log,
        ...accounts,
        async resolveAccount(address) {
          const found = await accounts.resolveAccount(address);
          if (found?.syncedThrough && BigInt(found.syncedThrough) > coveredThrough[instance]!)
            coveredThrough[instance] = BigInt(found.syncedThrough);
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
      });
    });
    const deliveredTo = new Map<string, { instance: number; askedBefore: number }>();
    let pollingInstance = 0;
    const onDeliverOf = (instance: number) => (_m: unknown, ackId: string) =>
      deliveredTo.set(ackId, { instance, askedBefore: asked[instance]!.get(accountId) ?? 0 });
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
      if (now <= d.askedBefore && !covered)
        violations.push(
          `message ${message.messageId} (step ${message.step}) acknowledged by instance ${d.instance} before a sync job was asked for after its delivery`,
        );
    };

    // Provider side.
    for (let i = 0; i < s.seedCount; i++) gmail.addMessage(email, { subject: `seed ${i}`, read: i % 2 === 0 });
    let mutations = 0;
    let lastMutation = 0;
    const delivered = new Set<number>();
    let step = 0;
    const notify = (mutation: number, fate: Fate) => {
      for (let c = 0; c < fate.copies; c++)
        queue.publish({ emailAddress: email, historyId: String(gmail.historyId(email)) }, step, fate.delay + c);
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

    for (const loop of loops) await loop.start();
    if (s.initialSync) {
      for (let i = 0; i < 50 && (await loops[0]!.routeSync(accountId))?.hasMore; i++);
    }
    if (s.signIn)
      await forwarding(app.container.liveInbox.engine, oracle).enqueueSync({ accountId, reason: 'sign-in' });

    let highest = await checkpoint(app, accountId);
    const afterStep = async (what: string) => {
      const c = await checkpoint(app, accountId);
      if (highest !== null)
        assert.ok(c !== null && c >= highest, `${what}: checkpoint moved backwards (${highest} -> ${c})`);
      if (c !== null) highest = c;
      assert.deepEqual(violations, [], what);
      assert.deepEqual(oracle.violations, [], `${what}: no job started before its time`);
      assert.deepEqual(
        loops.flatMap((l) => l.internalErrors),
        [],
        `${what}: no internal error`,
      );
    };
    const swallow = (p: Promise<unknown>) => p.catch(() => undefined);
    const idle = (what: string) => idleAll(loops, ids, what);
    const states = (what: string, final = false) =>
      assertStates(app, new Map([[accountId, watch]]), [{ accountId, connected: true, final }], what);
    const poll = async (instance: number) => {
      pollingInstance = instance;
      await swallow(intakes[instance]!.runOnce());
    };

    /** A takeover not fired yet stays armed through the end (it changes nothing of the mailbox). */
    let armedTakeover: ((instance: number) => Promise<void>) | null = null;
    for (const op of s.ops) {
      step++;
      const what = `step ${step} (${op.kind})`;
      switch (op.kind) {
        case 'change':
          applyChange(op.change, op.fate);
          break;
        case 'midSync':
          hook.fn = async () => applyChange(op.change, op.fate);
          break;
        case 'flood':
          for (let i = 0; i < op.pages * s.page; i++)
            gmail.addMessage(email, { subject: `flood ${step}.${i}`, read: i % 3 === 0 });
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
          if (op.late) {
            await idle(what);
            await untilDue(loops, time, ids);
          }
          await idle(what);
          await states(what);
          break;
        case 'routeRace':
          // The sync route and a worker on the same account at the same time: one of them is refused, nothing overlaps.
          await Promise.all([
            loops[op.instance]!.routeSync(accountId),
            (async () => {
              await app.container.liveInbox.engine.enqueueSync({ accountId, reason: 'sweep' });
              await idle(what);
            })(),
          ]);
          break;
        case 'tick':
          await time.advance(op.n * TICK_MS);
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
          await sql(
            `insert into sync_states as s (account_id, lease_owner, lease_until) values (?, 'crashed', now() + interval '1 hour')
             on conflict (account_id) do update set lease_owner = 'crashed', lease_until = now() + interval '1 hour'`,
            [accountId],
          );
          break;
        case 'recover':
          await sql(
            `update sync_states set lease_until = now() - interval '1 second' where account_id = ? and lease_owner = 'crashed'`,
            [accountId],
          );
          break;
        case 'steal':
          // The next hooked sync outlives its lease: the other instance's sync takes over and commits first.
          hook.fn = async (instance) => {
            tally.steals++;
            await sql(`update sync_states set lease_until = now() - interval '1 second' where account_id = ?`, [
              accountId,
            ]);
            await loops[1 - instance]!.routeSync(accountId);
          };
          break;
        case 'takeover': {
          const takeover = async (instance: number) => {
            // A job's sync, not the route's: the next one, if this is not.
            if (!loops[instance]!.jobOf(accountId)) return void (hook.fn ??= takeover);
            // This sync stalls after its read: its lease lapses, its job's heartbeat is gone (the job is handed on).
            const before = loops.map((l) => l.ended.get(accountId) ?? 0);
            await sql(
              `update sync_states set lease_owner = 'lapsed', lease_until = now() - interval '1 second' where account_id = ?`,
              [accountId],
            );
            if (!(await loops[instance]!.loseJob(accountId))) return;
            tally.takeovers++;
            // A notification comes meanwhile: the retry runs now, on another worker of either instance.
            await forwarding(loops[1 - instance]!.engine, oracle).enqueueSync({ accountId, reason: 'notification' });
            const deadline = Date.now() + 30_000;
            while (loops.every((l, i) => (l.ended.get(accountId) ?? 0) === before[i]) && Date.now() < deadline) {
              for (const l of loops) l.wake();
              await new Promise((r) => setTimeout(r, 10));
            }
            loops.forEach((l, i) => void ((l.ended.get(accountId) ?? 0) > before[i]! && tally.takenOverBy[i]!++));
          };
          hook.fn = takeover;
          armedTakeover = takeover;
          break;
        }
        case 'resync':
          await loops[0]!.routeSync(accountId, { fullResync: true });
          break;
        case 'open': {
          const threads = await sql<{ id: string }>('select id from mail_threads where account_id = ? order by id', [
            accountId,
          ]);
          if (!threads.length) break;
          const thread = threads[op.i % threads.length]!.id;
          await Promise.all([
            swallow(app.container.threadBodies.ensure(app.container.orm.em.fork(), accountId, thread)),
            idle(what),
          ]);
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
            queue.publish(
              op.garbage ? 'not json at all' : { emailAddress: 'nobody@model.test', historyId: '1' },
              step,
              op.fate.delay,
            );
          }
          break;
        case 'restart':
          tally.restarts++;
          await loops[op.instance]!.stop();
          await loops[op.instance]!.start();
          break;
      }
      await afterStep(what);
    }

    // The weather clears: faults end, a crashed holder's lease runs out (as a dead holder's does),
    // late notifications arrive, and time passes until nothing is left to do.
    if (hook.fn !== armedTakeover) hook.fn = null;
    gmail.clearFaults();
    queue.clearFaults();
    await sql(
      `update sync_states set lease_until = now() - interval '1 second' where account_id = ? and lease_owner in ('crashed', 'lapsed')`,
      [accountId],
    );
    for (const m of queue.messages) m.visibleAt = Math.min(m.visibleAt, queue.now);
    pollingInstance = 0;
    const syncsEnded = () => loops.reduce((n, l) => n + l.syncsEnded, 0);
    const settle = async (what: string) => {
      // Time passes: set-aside messages come due for their retry, as hours would make them.
      await sql('update mail_set_aside set retry_after = now() where account_id = ?', [accountId]);
      for (let round = 0; round < 300; round++) {
        const ended = syncsEnded();
        if (queue.pending().length) await time.advance(15_000); // every ack deadline runs out
        const taken = await intakes[0]!.runOnce();
        await idle(what);
        const moved = await untilDue(loops, time, ids);
        await idle(what);
        if (taken === 0 && moved === 0 && syncsEnded() === ended && queue.pending().length === 0) return;
      }
      assert.fail(`${what}: the jobs did not settle`);
    };
    await settle('after the schedule');
    hook.fn = null;
    await afterStep('final jobs');
    assert.deepEqual(
      queue.pending().map((m) => m.messageId),
      [],
      'every notification is eventually acknowledged',
    );
    assert.equal(
      await app.container.liveInbox.engine.count(QUEUES.mailSync, ['created', 'retry', 'active'], accountId),
      0,
      'no job left',
    );
    await states('after the schedule');

    // Without any sweep, the service's jobs alone converge when the last change was notified
    // (and no job of the account ran out of its retries: that one waits for the sweep).
    const setAside = (await app.syncState(accountId))?.dead_lettered_at;
    const messagesAside = (await sql('select 1 from mail_set_aside where account_id = ?', [accountId])).length;
    const notifiedLast =
      lastMutation === 0 ? s.initialSync || s.signIn || s.seedCount === 0 : delivered.has(lastMutation);
    if (notifiedLast && !setAside && !messagesAside)
      await assertInboxMatches(world(), accountId, email, 'after the notifications');

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
    await assertInboxMatches(world(), accountId, email, 'after the final sweep');
    await states('after the final sweep', true);
    await assertResume(app, watch, "a stream resumed from the schedule's first event");
    const listedPageTokens = gmail.requests
      .slice(listFrom)
      .filter((r) => r.endpoint === 'messages.list' && r.query.pageToken).length;
    tally.listedPages += listedPageTokens;
    return { listedPageTokens, eventsSeen: watch.events.length };
  } finally {
    hook.fn = null;
    await watch.close();
    for (const loop of loops) await loop.stop();
    unfollow();
    for (const [k, v] of Object.entries(oracle.tally) as [keyof typeof oracle.tally, number][])
      tally[k] = k.startsWith('max') ? Math.max(tally[k], v) : tally[k] + v;
    gmail.clearFaults();
    gmail.setDeltaOnlyLabels(false);
    await sql('delete from accounts where id = ?', [accountId]);
    await app.container.liveInbox.engine.boss.deleteAllJobs(QUEUES.mailSync);
    await app.container.liveInbox.engine.boss.deleteAllJobs(QUEUES.mailSyncDeadLetter);
  }
}

/** The run's figures so far (the tallies add up over the tests; `schedules`: this test's). */
const report = (name: string, started: number, from: number) =>
  process.stdout.write(
    `# live-model: ${name}: ${scheduleNo - from} schedules in ${Date.now() - started} ms; so far ${JSON.stringify({ ...tally, ...stateTally, ...loopTally, virtualMs: time.moved, advanceMs: time.spentMs, ...time.steps })}\n`,
  );
const seedOf = () => SEED ?? (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) | 0;

describe('live inbox model, two instances on the production worker loop', () => {
  let close: () => Promise<void>;
  before(async () => {
    let instance: () => Promise<TestApp>;
    ({ app, gmail, realGmail, time, instance, close } = await startModelApp(TOKEN_PREFIX, 7));
    other = await instance();
  });

  after(() => close());

  it(`random schedules converge: stored inbox == provider inbox, events and sync state agree (${RUNS} schedules)`, async () => {
    const started = Date.now();
    const from = scheduleNo;
    const seed = seedOf();
    process.stdout.write(
      `# live-model: seed ${seed} (replay with MODEL_SEED=${seed}; fast-check adds the path of a failure)\n`,
    );
    await fc.assert(
      fc.asyncProperty(scheduleArb, async (s) => void (await runSchedule(s))),
      { numRuns: RUNS, seed, ...(PATH ? { path: PATH } : {}), verbose: 1 },
    );
    report('small', started, from);
    if (!PATH && RUNS >= 50) {
      assert.ok(tally.deferredRuns > 0, 'some deferred jobs ran (busy, quota, history lag), each not before its time');
      assert.ok(tally.takeovers > 0, 'some jobs were handed to another worker while their sync wrote');
    }
  });

  it('a retry, a busy lease and a quota wait come due on virtual time: never before, and then at once', async () => {
    const email = `time-${randomUUID().slice(0, 8)}@model.test`;
    const accountId = await createModelAccount(world(), email);
    const oracle = new DeferralOracle(time);
    const loop = createModelLoop({
      app,
      gmail: realGmail,
      page: 50,
      callsPerJob: 4,
      log: quiet,
      time,
      oracle,
      hook: { fn: null },
      concurrency: { workers: 2, batch: 2 },
    });
    const engine = app.container.liveInbox.engine;
    const stored = async (id: string) =>
      (await sql('select 1 from mail_messages where account_id = ? and provider_message_id = ?', [accountId, id]))
        .length > 0;
    const sweep = () => engine.enqueueSync({ accountId, reason: 'sweep' });
    /** The account's job waits `wait` ms (give or take the engine's rounding): not run a millisecond before, run once due. */
    const comesDue = async (what: string, mail: string, min: number, max: number) => {
      await idleAll([loop], [accountId], what);
      const { nextDueMs } = await engine.waiting(QUEUES.mailSync, [accountId]);
      assert.ok(
        nextDueMs !== null && nextDueMs >= min - 5 && nextDueMs <= max,
        `${what}: deferred ${nextDueMs} ms (${min}..${max})`,
      );
      const ran = loop.syncsRun;
      await time.advance(nextDueMs - 1);
      await idleAll([loop], [accountId], what);
      assert.equal(loop.syncsRun, ran, `${what}: nothing ran a millisecond before it was due`);
      assert.equal(await stored(mail), false, `${what}: not stored before`);
      await untilDue([loop], time, [accountId]);
      await idleAll([loop], [accountId], what);
      assert.equal(await stored(mail), true, `${what}: stored once due`);
      assert.deepEqual(oracle.violations, [], `${what}: the oracle saw nothing early`);
    };
    await loop.start();
    try {
      gmail.addMessage(email, { subject: 'first' });
      await engine.enqueueSync({ accountId, reason: 'sign-in' });
      await idleAll([loop], [accountId], 'the first sync');
      // A failure: the retry backs off 5..10 s (the production retry: 5 s, doubled per retry, with jitter).
      gmail.injectFault({ endpoint: 'history.list', status: 500, times: 1 });
      const a = gmail.addMessage(email, { subject: 'after a failure' });
      await sweep();
      await comesDue('a retry', a.id, 5_000, 10_000);
      // A lease held elsewhere: the job comes back after the lease's Retry-After (5 s).
      await sql(
        `update sync_states set lease_owner = 'crashed', lease_until = now() + interval '1 hour' where account_id = ?`,
        [accountId],
      );
      const b = gmail.addMessage(email, { subject: 'after a busy lease' });
      await sweep();
      await idleAll([loop], [accountId], 'busy');
      await sql(
        `update sync_states set lease_until = now() - interval '1 second' where account_id = ? and lease_owner = 'crashed'`,
        [accountId],
      );
      await comesDue('a busy lease', b.id, 5_000, 5_000);
      // The provider's quota answer: its Retry-After, 30 s.
      gmail.injectFault({
        endpoint: 'history.list',
        status: 429,
        reason: 'userRateLimitExceeded',
        retryAfterSeconds: 30,
        times: 1,
      });
      const c = gmail.addMessage(email, { subject: 'after a quota answer' });
      await sweep();
      await comesDue('a quota wait', c.id, 30_000, 30_000);
      assert.deepEqual(
        { retries: oracle.tally.retries, deferredRuns: oracle.tally.deferredRuns },
        { retries: 1, deferredRuns: 2 },
        'the oracle checked the retry and both deferrals',
      );
    } finally {
      await loop.stop();
      gmail.clearFaults();
      await sql('delete from accounts where id = ?', [accountId]);
      await engine.boss.deleteAllJobs(QUEUES.mailSync);
    }
  });

  it(`a big inbox: over two listing pages, its event log past its trim (${BIG_RUNS} schedules)`, async () => {
    const started = Date.now();
    const from = scheduleNo;
    const seed = seedOf();
    process.stdout.write(
      `# live-model big: seed ${seed} (replay with MODEL_SEED=${seed} MODEL_BIG_PATH=<the path of a failure>)\n`,
    );
    await fc.assert(
      fc.asyncProperty(bigScheduleArb, async (s) => {
        const seen = await runSchedule(s);
        assert.ok(
          seen.listedPageTokens >= 2,
          `the listing went over ${seen.listedPageTokens} next-page tokens (pages of ${PROVIDER_LISTING_PAGE})`,
        );
      }),
      { numRuns: BIG_RUNS, seed, ...(BIG_PATH ? { path: BIG_PATH } : {}), verbose: 1 },
    );
    report('big', started, from);
    if (BIG_RUNS > 0 && !BIG_PATH)
      assert.ok(
        stateTally.resumedAfterTrim > 0,
        'a stream resumed from a trimmed id got a reset (the log passed its trim)',
      );
  });
});
