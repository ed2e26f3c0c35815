/**
 * The oracle over live events and sync state of the model tests: each account of a schedule
 * has an event stream open from its start (the events service behind GET /api/mail/events,
 * reopened from its last id when it ends, as a client does), and at a quiescent point, once
 * the stream heard the newest event of the account's log, these agree with the model:
 *  - the `sync` event the stream announced last says what the event log module reads now
 *    (`syncSnapshot`): no change of state went unannounced;
 *  - an account with no job at all is not `catching_up` (unless its job ran out of retries and
 *    waits for the sweep), and at the end of a schedule it is `current`; a disconnected one
 *    is `needs_reconnect`;
 *  - an account with no job does not say its sync is failing (`last_error_code`) unless its job
 *    was dead-lettered: a failure that is not final has its retry waiting;
 *  - the sync-state service (GET /api/mail/sync-state) gives the account's last sync, not older
 *    than the stream's, and no quota wait at the end;
 *  - an account with no job is not behind (notified since its last sync: what the backlog gauge
 *    counts) unless dead-lettered, and the backlog gauge (`mia_sync_backlog_accounts`, as GET
 *    /metrics reads it: jobs/readings.ts) counts exactly the schedule's connected accounts that
 *    are behind, the dead-lettered gauge those whose job ran out of retries;
 *  - the account's event log never holds more than its trim (KEEP_PER_ACCOUNT), and a stream
 *    resumed from the first id the schedule's stream saw gets `reset` exactly when that id was
 *    trimmed away.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MailEvent } from '../../../shared/schemas/events.ts';
import { KEEP_PER_ACCOUNT } from '../../../server/domain/events/announce.ts';
import { syncSnapshot } from '../../../server/domain/events/event-log.ts';
import { QUEUES } from '../../../server/jobs/engine.ts';
import { liveInboxReadings } from '../../../server/jobs/readings.ts';
import type { TestApp } from '../../helpers/app.ts';

/** What the oracle looked at over a run (printed by the tests). */
export const stateTally = {
  checks: 0,
  streamEvents: 0,
  reopened: 0,
  maxLogged: 0,
  trimmedLogs: 0,
  resumedAfterTrim: 0,
  resumedInLog: 0,
};

type Event = { id: string; data: MailEvent };

export interface StreamWatch {
  readonly accountId: string;
  readonly events: Event[];
  /** Events the account's log recorded over the schedule (ids seen, newest first seen). */
  readonly firstId: string | undefined;
  /** Resolves once the stream gave its first event (where the account stands), or could not open. */
  readonly opened: Promise<void>;
  close(): Promise<void>;
}

let streams = 0;

/** Opens the account's stream and reads it in the background until `close` (reopened from its last id when it ends). */
export function watchStream(app: TestApp, accountId: string): StreamWatch {
  const abort = new AbortController();
  const events: Event[] = [];
  const sessionKey = `model-stream-${++streams}`;
  let closed = false;
  let isOpen: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (isOpen = resolve));
  const reading = (async () => {
    let last: string | null = null;
    for (let opened = 0; !closed && opened < 50; opened++) {
      if (opened > 0) stateTally.reopened++;
      let stream: AsyncGenerator<Event, void>;
      try {
        stream = await app.container.services.events.open({
          accountId,
          sessionKey,
          lastEventId: last,
          signal: abort.signal,
        });
      } catch {
        isOpen();
        return; // the account is gone (deleted): nothing to read
      }
      for await (const e of stream) {
        events.push(e);
        isOpen();
        last = e.id;
        stateTally.streamEvents++;
        if (closed) break;
      }
    }
  })();
  return {
    accountId,
    events,
    get firstId() {
      return events[0]?.id;
    },
    opened,
    async close() {
      closed = true;
      abort.abort();
      isOpen();
      await reading;
      // The stream frees its place in the background: wait for it, so that no statement of it meets the schedule's
      // teardown (a batch of places freed while the accounts are deleted, row locks taken in two orders: a deadlock).
      const sql = sqlOf(app);
      const deadline = Date.now() + 10_000;
      while (
        (
          await sql<{ n: number }>('select count(*)::int as n from event_streams where session_key = ?', [sessionKey])
        )[0]!.n > 0
      ) {
        if (Date.now() > deadline) throw new Error(`the stream of ${accountId} did not free its place`);
        await sleep(5);
      }
    },
  };
}

const sqlOf =
  (app: TestApp) =>
  async <T>(q: string, params: unknown[] = []) =>
    (await app.container.orm.em.fork().execute(q, params)) as T[];

/** Until the stream has heard the newest event of the account's log (bounded: a lost notice fails here). */
async function caughtUp(app: TestApp, w: StreamWatch, what: string): Promise<void> {
  const sql = sqlOf(app);
  const deadline = Date.now() + 15_000;
  for (;;) {
    const [row] = await sql<{ id: string | null; n: number }>(
      'select max(id)::text as id, count(*)::int as n from mail_events where account_id = ?',
      [w.accountId],
    );
    stateTally.maxLogged = Math.max(stateTally.maxLogged, row!.n);
    assert.ok(
      row!.n <= KEEP_PER_ACCOUNT,
      `${what}: the event log keeps at most ${KEEP_PER_ACCOUNT} events (${row!.n})`,
    );
    const heard = w.events.at(-1)?.id;
    if (!row!.id || (heard && BigInt(heard) >= BigInt(row!.id))) return;
    if (Date.now() > deadline)
      assert.fail(
        `${what}: the stream did not hear event ${row!.id} of the account's log (last heard ${heard ?? 'none'})`,
      );
    await sleep(10);
  }
}

export interface Expected {
  accountId: string;
  connected: boolean;
  /** The end of the schedule: the account must be `current`. */
  final: boolean;
}

/**
 * At a quiescent point (no sync running; accounts with a job of any kind are skipped unless
 * `final`): the streams, the snapshot, the sync-state service and the gauges agree with the model.
 */
export async function assertStates(
  app: TestApp,
  watches: Map<string, StreamWatch>,
  accounts: Expected[],
  what: string,
): Promise<void> {
  const sql = sqlOf(app);
  const engine = app.container.liveInbox.engine;
  let behind = 0;
  let deadLettered = 0;
  for (const a of accounts) {
    const w = watches.get(a.accountId);
    const em = app.container.orm.em.fork();
    const snapshot = await syncSnapshot(em, a.accountId);
    const [row] = await sql<{ dead: boolean; code: string | null; behind: boolean }>(
      `select dead_lettered_at is not null as dead, last_error_code as code, coalesce(last_notification_at > coalesce(last_synced_at, '-infinity'), false) as behind
         from sync_states where account_id = ?`,
      [a.accountId],
    );
    if (a.connected && row?.behind) behind++;
    if (a.connected && row?.dead) deadLettered++;
    const jobs = await engine.count(QUEUES.mailSync, ['created', 'retry', 'active'], a.accountId);
    if (jobs > 0 && !a.final) continue;
    stateTally.checks++;
    const who = `${what}: account ${a.accountId}`;
    if (w) {
      await caughtUp(app, w, who);
      const lastSync = w.events.findLast((e) => e.data.type === 'sync');
      assert.ok(lastSync, `${who}: its stream announced where it stands`);
      // Read again after the stream caught up: what it announced last is what the account's state is now.
      const now = await syncSnapshot(app.container.orm.em.fork(), a.accountId);
      assert.equal(
        lastSync.data.type === 'sync' && lastSync.data.state,
        now.state,
        `${who}: the last sync event its stream heard says where it stands (${JSON.stringify(lastSync.data)} vs ${JSON.stringify(now)})`,
      );
      const state = await app.container.services.sync.syncState(app.container.orm.em.fork(), a.accountId);
      const announced = lastSync.data.type === 'sync' ? lastSync.data.lastSyncedAt : null;
      if (announced)
        assert.ok(
          state.lastSyncedAt && state.lastSyncedAt >= announced,
          `${who}: sync-state's last sync (${state.lastSyncedAt}) is not older than the stream's (${announced})`,
        );
      if (a.final) assert.equal(state.quotaWaitUntil, undefined, `${who}: no quota wait at the end`);
    }
    if (a.connected && !row?.dead)
      assert.equal(row?.code ?? null, null, `${who}: no failure recorded without a retry waiting or a dead letter`);
    if (!a.connected)
      assert.equal(snapshot.state, 'needs_reconnect', `${who}: a disconnected account needs a reconnect`);
    else if (a.final) assert.equal(snapshot.state, 'current', `${who}: current at the end, nothing pending`);
    else if (!row?.dead) {
      assert.notEqual(snapshot.state, 'catching_up', `${who}: not catching up without a job`);
      assert.equal(row?.behind, false, `${who}: not behind its notifications without a job`);
    }
    if (a.connected && a.final) assert.equal(row?.behind, false, `${who}: not behind at the end`);
  }
  const gauges = await liveInboxReadings(app.container.orm, engine).syncState();
  assert.equal(
    gauges.backlogAccounts,
    behind,
    `${what}: the backlog gauge counts the accounts behind their notifications`,
  );
  assert.equal(
    gauges.deadLetteredAccounts,
    deadLettered,
    `${what}: the dead-lettered gauge counts the accounts whose job ran out of retries`,
  );
}

/**
 * A client that resumes from the first id the schedule's stream saw: `reset` first exactly
 * when that event was trimmed from the log, and then where the account stands.
 */
export async function assertResume(app: TestApp, w: StreamWatch, what: string): Promise<void> {
  const first = w.firstId;
  if (!first) return;
  const sql = sqlOf(app);
  const [row] = await sql<{ kept: boolean; n: number }>(
    'select exists (select 1 from mail_events where account_id = ? and id = ?::bigint) as kept, (select count(*)::int from mail_events where account_id = ?) as n',
    [w.accountId, first, w.accountId],
  );
  const abort = new AbortController();
  try {
    const stream = await app.container.services.events.open({
      accountId: w.accountId,
      sessionKey: `model-resume-${++streams}`,
      lastEventId: first,
      signal: abort.signal,
    });
    const head = await stream.next();
    assert.ok(!head.done, `${what}: a resumed stream has a first event`);
    if (row!.kept) {
      stateTally.resumedInLog++;
      assert.equal(head.value.data.type, 'sync', `${what}: resumed from an id still in the log, no reset`);
    } else {
      stateTally.trimmedLogs++;
      stateTally.resumedAfterTrim++;
      assert.equal(
        head.value.data.type,
        'reset',
        `${what}: resumed from an id trimmed away (${row!.n} events kept), a reset first`,
      );
    }
    await stream.return(undefined);
  } finally {
    abort.abort();
  }
}
