/**
 * The live inbox of several accounts at once, on the production worker loop: random schedules
 * over three accounts of provider-side changes (new, deleted, read/unread, archived and back;
 * label records with or without the message's labels), their notifications (duplicated,
 * delayed, lost), history expiry, provider faults, a job whose process dies between its
 * commit and its completion, the worker loop stopped and started, the route's Sync and thread
 * opens racing the workers, and the user's own actions in the middle of it all: disconnect,
 * account deletion, reconnect (a new sign-in after a deletion). The real intake, job engine
 * (pg-boss `work`: polling, batches, per-job settlement, heartbeats, stop), mail-sync worker,
 * sync service, event streams, Gmail stand-in and database run it; the schedule decides only
 * what happens and when time passes (model-loop.ts, model-time.ts: pg-boss's own clock, so a
 * deferred job or a retry comes due only once the schedule moved that much virtual time).
 * One run more at production sizes (accounts-model-schedule.ts): ten accounts, one of them over
 * two listing pages, on the production loop's 8 workers × 8 jobs, CALLS_PER_JOB calls of
 * SYNC_BATCH messages: it must list over two page tokens, and run more than three syncs at once.
 *
 * Checked on every schedule:
 *  - after every step: no sync, user action or thread open ended in an internal error (a
 *    deadlock, a 500); each account's checkpoint never moves backwards; no job started before
 *    its deferral or its retry's backoff had passed in virtual time (model-time.ts);
 *  - whenever the loop is idle, and at the end: each account's live events and sync state
 *    agree with the model (model-state-oracle.ts: the last `sync` event its open stream heard,
 *    the sync-state service, the backlog and dead-letter gauges; not catching up nor behind
 *    without a job, `current` at the end, `needs_reconnect` once disconnected);
 *  - at the end, after the service's own jobs and its quiet-account sweep: every notification
 *    acknowledged, no job left; every connected account's store equals the provider's: the
 *    inbox, every stored row (labels, thread, existence), the threads' aggregates, and every
 *    inbox thread as the user opening it sees it (accounts-model-oracle.ts); a deleted account
 *    has no row anywhere; neither a deleted nor a disconnected account is called for.
 *
 * The worker loop runs beside the schedule, so a failing schedule may not replay exactly:
 * the seed and path are printed (MODEL_SEED, MODEL_PATH; MODEL_PRODUCTION_PATH for the
 * production run), and the schedule with its shrunk form. MODEL_ACCOUNTS_RUNS sets the number
 * of schedules (default 30), MODEL_PRODUCTION_RUNS the production ones (default 1).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { Account } from '../../../db/entities/index.ts';
import { AppError } from '../../../server/domain/errors.ts';
import { createSyncState } from '../../../server/domain/mail/sync/states/index.ts';
import { createNotificationIntake, notificationAccounts } from '../../../server/intake/notifications.ts';
import { QUEUES } from '../../../server/jobs/engine.ts';
import { createLogger } from '../../../server/infra/logger.ts';
import type { GmailFactory } from '../../../server/providers/gmail.ts';
import type { GmailStandIn } from '../../../stand-ins/gmail.stand-in.ts';
import {
  PRODUCTION_ACCOUNTS,
  productionScheduleArb,
  scheduleArb,
  type Change,
  type Fate,
  type Schedule,
} from './accounts-model-schedule.ts';
import { SYNC_BATCH } from '../../../server/domain/mail/sync/sync.service.ts';
import { BATCH, CALLS_PER_JOB, WORKERS } from '../../../server/jobs/mail-sync.job.ts';
import type { TestApp } from '../../helpers/app.ts';
import { createModelLoop, forwarding, idleAll, loopTally, untilDue, type ReadHook } from './model-loop.ts';
import { DeferralOracle, type ModelTime } from './model-time.ts';
import { assertAccountMatches, assertNothingLeft, oracleTally } from './accounts-model-oracle.ts';
import { ModelQueue, TICK_MS } from './model-queue.ts';
import { assertResume, assertStates, stateTally, watchStream, type StreamWatch } from './model-state-oracle.ts';
import {
  checkpoint,
  createModelAccount,
  modelSql,
  startModelApp,
  storeModelCredentials,
  type ModelWorld,
} from './model-world.ts';

const RUNS = Number(process.env.MODEL_ACCOUNTS_RUNS ?? 30);
const PRODUCTION_RUNS = Number(process.env.MODEL_PRODUCTION_RUNS ?? 1);
const PRODUCTION_PATH = process.env.MODEL_PRODUCTION_PATH;
const SEED = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);
const PATH = process.env.MODEL_PATH;
const TOKEN_PREFIX = 'accounts-model:';

let app: TestApp;
let gmail: GmailStandIn;
let realGmail: GmailFactory;
let time: ModelTime;
/** The schedule's: what runs when (model-time.ts). */
let oracle: DeferralOracle;
/** The schedule's accounts' open event streams (a disconnected or deleted account's was ended, as the routes end it). */
let watches: Map<string, StreamWatch>;
const deferrals = { deferrals: 0, deferredRuns: 0, retries: 0, broughtForward: 0, maxDeferralMs: 0, maxBackoffMs: 0 };
const world = (): ModelWorld => ({ app, gmail, tokenPrefix: TOKEN_PREFIX });
const sql = <T = Record<string, unknown>>(q: string, params: unknown[] = []) => modelSql(app)<T>(q, params);
const quiet = createLogger({ level: 'silent' });
let scheduleNo = 0;
/** What the schedules did, over the run (printed, so a run whose schedules never crash or delete shows it). */
const tally = { crashes: 0, disconnects: 0, deletions: 0, reconnects: 0, restarts: 0, routeSyncs: 0 };

interface ModelAccount {
  email: string;
  id: string;
  state: 'connected' | 'disconnected' | 'deleted';
  /** Ids of this mailbox's accounts that were deleted (a new sign-in is a new account). */
  gone: string[];
  highest: bigint | null;
}

/** What a new sign-in leaves, as completeSignIn does: credentials, the sync state, the first sync queued. */
async function signIn(m: ModelAccount): Promise<void> {
  const em = app.container.orm.em.fork();
  if (m.state === 'deleted') {
    m.id = await createModelAccount(world(), m.email);
    m.highest = null;
  } else {
    await storeModelCredentials(world(), m.id, m.email);
    await em.nativeUpdate(Account, { id: m.id }, { needsReconnect: false });
    await createSyncState(em, m.id);
  }
  m.state = 'connected';
  if (!watches.has(m.id)) {
    const w = watchStream(app, m.id);
    watches.set(m.id, w);
    await w.opened;
  }
  await forwarding(app.container.liveInbox.engine, oracle).enqueueSync({ accountId: m.id, reason: 'sign-in' });
}

/** The routes end the account's streams with a disconnect or a deletion (their clients then get 401). */
async function endStream(accountId: string): Promise<void> {
  await watches.get(accountId)?.close();
  watches.delete(accountId);
}

/** Runs one schedule; answers which of its accounts ended connected. */
async function runSchedule(s: Schedule): Promise<boolean[]> {
  const run = ++scheduleNo;
  const engine = app.container.liveInbox.engine;
  const auth = app.container.services.auth;
  oracle = new DeferralOracle(time);
  watches = new Map();
  const hook: ReadHook = { fn: null };
  const loop = createModelLoop({
    app,
    gmail: realGmail,
    time,
    oracle,
    hook,
    page: s.page,
    callsPerJob: s.rounds,
    concurrency: s.concurrency,
    log: process.env.MODEL_DEBUG ? app.container.log.child({ model: run }) : quiet,
  });
  const loops = [loop];
  const queue = new ModelQueue(true);
  const unfollow = time.follow(queue);
  const intake = createNotificationIntake({
    queue,
    log: quiet,
    engine: forwarding(engine, oracle),
    ...notificationAccounts(app.container.orm),
    batchSize: 10,
  });
  const accounts: ModelAccount[] = [];
  const allIds = () => accounts.flatMap((m) => [m.id, ...m.gone]);
  const violations: string[] = [];
  const userAction = async (what: string, p: Promise<unknown>) => {
    await p.catch((err: unknown) => violations.push(`${what}: ${String((err as Error).stack ?? err)}`));
  };
  gmail.setDeltaOnlyLabels(s.deltaOnlyLabels);
  try {
    for (let a = 0; a < s.seeds.length; a++) {
      const email = `acc-${run}-${a}-${randomUUID().slice(0, 8)}@model.test`;
      for (let i = 0; i < s.seeds[a]!; i++) gmail.addMessage(email, { subject: `seed ${i}`, read: i % 2 === 0 });
      const m: ModelAccount = { email, id: '', state: 'deleted', gone: [], highest: null };
      await signIn(m);
      accounts.push(m);
    }
    await loop.start();

    let step = 0;
    const notify = (m: ModelAccount, fate: Fate) => {
      for (let c = 0; c < fate.copies; c++)
        queue.publish({ emailAddress: m.email, historyId: String(gmail.historyId(m.email)) }, step, fate.delay + c);
    };
    const applyChange = (m: ModelAccount, change: Change, fate: Fate) => {
      const all = gmail.messages(m.email);
      const pick = (i: number) => all[i % all.length]!;
      const before = gmail.historyId(m.email);
      if (change.kind === 'add') {
        const thread = change.reply !== null && all.length ? pick(change.reply).threadId : undefined;
        gmail.addMessage(m.email, {
          ...(thread ? { threadId: thread } : {}),
          labelIds: change.inbox ? ['INBOX', 'CATEGORY_PERSONAL'] : ['SENT'],
          read: !change.unread,
        });
      } else if (!all.length) return;
      else if (change.kind === 'delete') gmail.deleteMessage(m.email, pick(change.i).id);
      else if (change.kind === 'read') gmail.setRead(m.email, pick(change.i).id, change.read);
      else if (change.kind === 'archive') gmail.archive(m.email, pick(change.i).id);
      else gmail.moveToInbox(m.email, pick(change.i).id);
      if (gmail.historyId(m.email) !== before) notify(m, fate);
    };
    const states = (what: string, final = false) =>
      assertStates(
        app,
        watches,
        accounts
          .filter((m) => m.state !== 'deleted')
          .map((m) => ({ accountId: m.id, connected: m.state === 'connected', final })),
        what,
      );
    const afterStep = async (what: string) => {
      for (const m of accounts) {
        if (m.state === 'deleted') continue;
        const c = await checkpoint(app, m.id);
        if (m.highest !== null)
          assert.ok(
            c !== null && c >= m.highest,
            `${what}: ${m.email}'s checkpoint moved backwards (${m.highest} -> ${c})`,
          );
        if (c !== null) m.highest = c;
      }
      assert.deepEqual([...violations, ...loop.internalErrors], [], `${what}: no internal error`);
      assert.deepEqual(oracle.violations, [], `${what}: no job started before its time`);
    };

    for (const op of s.ops) {
      step++;
      const m = 'a' in op ? accounts[op.a]! : undefined;
      switch (op.kind) {
        case 'change':
          applyChange(m!, op.change, op.fate);
          break;
        case 'midSync':
          hook.fn = async () => applyChange(m!, op.change, op.fate);
          break;
        case 'flood':
          for (let i = 0; i < op.n; i++)
            gmail.addMessage(m!.email, { subject: `flood ${step}.${i}`, read: i % 3 === 0 });
          notify(m!, { copies: 1, delay: 0 });
          break;
        case 'poll':
          queue.nextPull = { order: op.order, take: op.take };
          await intake.runOnce().catch(() => undefined);
          break;
        case 'wait':
          await idleAll(loops, allIds(), `step ${step}`);
          await states(`step ${step} (wait)`);
          break;
        case 'tick':
          await time.advance(op.n * TICK_MS);
          break;
        case 'expire':
          gmail.expireHistory(m!.email);
          break;
        case 'crash':
          loop.crashAfterCommit(m!.id);
          break;
        case 'recover':
          tally.crashes += await loop.recoverCrashes();
          break;
        case 'restart':
          tally.restarts++;
          await loop.stop();
          await loop.start();
          break;
        case 'route':
          if (m!.state === 'deleted') break;
          tally.routeSyncs++;
          await loop.routeSync(m!.id, { fullResync: op.full });
          break;
        case 'open': {
          if (m!.state === 'deleted') break;
          const threads = await sql<{ id: string }>('select id from mail_threads where account_id = ? order by id', [
            m!.id,
          ]);
          if (!threads.length) break;
          const thread = threads[op.i % threads.length]!.id;
          await app.container.services.threads
            .detail(app.container.orm.em.fork(), m!.id, thread)
            .catch((err: unknown) => {
              if (!(err instanceof AppError) || err.code === 'INTERNAL_ERROR')
                violations.push(`open: ${String((err as Error).stack ?? err)}`);
            });
          break;
        }
        case 'fault':
          gmail.injectFault({ endpoint: op.endpoint, status: op.status, afterCalls: op.afterCalls, times: op.times });
          break;
        case 'disconnect':
          if (m!.state !== 'connected') break;
          tally.disconnects++;
          await userAction('disconnect', auth.disconnect(app.container.orm.em.fork(), m!.id));
          await endStream(m!.id);
          m!.state = 'disconnected';
          break;
        case 'delete':
          if (m!.state === 'deleted') break;
          tally.deletions++;
          await userAction('delete', auth.deleteAccount(app.container.orm.em.fork(), m!.id));
          await endStream(m!.id);
          m!.gone.push(m!.id);
          m!.state = 'deleted';
          break;
        case 'reconnect':
          if (m!.state === 'connected') break;
          tally.reconnects++;
          await signIn(m!);
          break;
      }
      await afterStep(`step ${step} (${op.kind})`);
    }

    // The weather clears: faults end, late notifications arrive, time passes until nothing is left to do.
    hook.fn = null;
    gmail.clearFaults();
    for (const q of queue.messages) q.visibleAt = Math.min(q.visibleAt, queue.now);
    // Time passes, as hours would pass it: set-aside messages come due for their retry.
    const setAsideDue = () =>
      sql('update mail_set_aside set retry_after = now() where account_id = any(array[?]::uuid[])', [allIds()]);
    const settle = async (what: string) => {
      for (let round = 0; round < 300; round++) {
        // Syncs that end, not that start: one running as the round begins may set messages aside after the move.
        const ended = loop.syncsEnded;
        await setAsideDue();
        if (queue.pending().length) await time.advance(15_000); // every ack deadline runs out
        const taken = await intake.runOnce();
        const recovered = await loop.recoverCrashes();
        tally.crashes += recovered;
        await idleAll(loops, allIds(), what);
        const moved = await untilDue(loops, time, allIds());
        await idleAll(loops, allIds(), what);
        if (!taken && !recovered && !moved && loop.syncsEnded === ended && !queue.pending().length) return;
      }
      assert.fail(`${what}: the jobs did not settle`);
    };
    await settle('after the schedule');
    await sql(
      `update sync_states set last_synced_at = now() - interval '7 hours', last_notification_at = now() - interval '7 hours',
       updated_at = now() - interval '7 hours', next_sweep_at = null where account_id = any(array[?]::uuid[])`,
      [allIds()],
    );
    // Nothing runs now: the sweep's syncs, which it queues, find every set-aside message due.
    await setAsideDue();
    const swept = await app.container.liveInbox.scheduled['quiet-sweep']();
    for (const m of accounts)
      if (m.state === 'connected') assert.ok(swept.stale.includes(m.id), `the sweep finds ${m.email}`);
    const quietFrom = Date.now();
    await settle('after the sweep');
    await afterStep('the end');

    assert.deepEqual(
      queue.pending().map((q) => q.messageId),
      [],
      'every notification is acknowledged',
    );
    for (const id of allIds())
      assert.equal(await engine.count(QUEUES.mailSync, ['created', 'retry', 'active'], id), 0, `no job left for ${id}`);
    for (const m of accounts) {
      const silent = m.state === 'connected' ? m.gone : [...new Set([m.id, ...m.gone])];
      for (const id of silent) {
        const late = (loop.calls.get(id) ?? []).filter((t) => t >= quietFrom);
        assert.equal(
          late.length,
          0,
          `${m.email}: no provider call for ${m.state === 'connected' ? 'a deleted account' : `a ${m.state} account`} (${id})`,
        );
      }
      for (const id of m.gone) await assertNothingLeft(world(), id, `${m.email} after its deletion`);
      if (m.state === 'connected')
        await assertAccountMatches(world(), m.id, m.email, `${m.email} after the final sweep`);
    }
    await states('the end', true);
    for (const w of watches.values())
      await assertResume(app, w, `${w.accountId}: a stream resumed from the schedule's first event`);
    return accounts.map((m) => m.state === 'connected');
  } finally {
    for (const w of watches.values()) await w.close();
    await loop.stop();
    unfollow();
    for (const [k, v] of Object.entries(oracle.tally) as [keyof typeof deferrals, number][])
      deferrals[k] = k.startsWith('max') ? Math.max(deferrals[k], v) : deferrals[k] + v;
    gmail.clearFaults();
    gmail.setDeltaOnlyLabels(false);
    await sql('delete from accounts where id = any(array[?]::uuid[])', [allIds()]);
    await engine.boss.deleteAllJobs(QUEUES.mailSync);
    await engine.boss.deleteAllJobs(QUEUES.mailSyncDeadLetter);
  }
}

describe('live inbox of several accounts, on the production worker loop', () => {
  let close: () => Promise<void>;
  before(async () => {
    ({ app, gmail, realGmail, time, close } = await startModelApp(TOKEN_PREFIX, 11));
  });
  after(() => close());

  /** The run's figures so far (the tallies add up over the tests; `schedules`: this test's). */
  const report = (name: string, started: number, from: number) =>
    process.stdout.write(
      `# accounts-model: ${name}: ${scheduleNo - from} schedules in ${Date.now() - started} ms; so far ${JSON.stringify({ ...tally, ...oracleTally, ...deferrals, ...stateTally, virtualMs: time.moved, advanceMs: time.spentMs, ...time.steps, ...loopTally })}\n`,
    );
  const seedOf = () => SEED ?? (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) | 0;

  it(`random schedules over 3 accounts converge, and deleted or disconnected accounts are left alone (${RUNS} schedules)`, async () => {
    const seed = seedOf();
    process.stdout.write(
      `# accounts-model: seed ${seed} (replay with MODEL_SEED=${seed}; fast-check adds the path of a failure)\n`,
    );
    const started = Date.now();
    const from = scheduleNo;
    await fc.assert(
      fc.asyncProperty(scheduleArb, async (s) => void (await runSchedule(s))),
      { numRuns: RUNS, seed, ...(PATH ? { path: PATH } : {}), verbose: 1 },
    );
    report('small', started, from);
  });

  it(`at production sizes: ${PRODUCTION_ACCOUNTS} accounts (one over two listing pages), ${WORKERS} workers × ${BATCH} jobs, ${CALLS_PER_JOB} calls of ${SYNC_BATCH} (${PRODUCTION_RUNS} schedules)`, async () => {
    const seed = seedOf();
    process.stdout.write(
      `# accounts-model production: seed ${seed} (replay with MODEL_SEED=${seed} MODEL_PRODUCTION_PATH=<the path of a failure>)\n`,
    );
    const started = Date.now();
    const from = scheduleNo;
    loopTally.maxInFlight = 0;
    const property = fc.asyncProperty(productionScheduleArb, async (s) => {
      const mark = gmail.requests.length;
      const [bigConnected] = await runSchedule(s);
      const tokens = gmail.requests
        .slice(mark)
        .filter((r) => r.endpoint === 'messages.list' && r.query.pageToken).length;
      // Connected at the end, its store equals the provider's: it was listed, over the pages.
      if (bigConnected)
        assert.ok(tokens >= 2, `the big inbox was listed over ${tokens} next-page tokens (pages of 500)`);
    });
    await fc.assert(property, {
      numRuns: PRODUCTION_RUNS,
      seed,
      ...(PRODUCTION_PATH ? { path: PRODUCTION_PATH } : {}),
      verbose: 1,
    });
    report('production', started, from);
    if (PRODUCTION_RUNS > 0)
      assert.ok(
        loopTally.maxInFlight > 3,
        `syncs ran side by side on the production loop (at most ${loopTally.maxInFlight} at once)`,
      );
  });
});
