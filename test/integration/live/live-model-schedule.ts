/**
 * The schedules of the live-inbox model (live-model.test.ts): what happens to one account's
 * mailbox, its notifications and the two instances of the service, step by step, and when time
 * passes. Small schedules by the hundred; big ones (an inbox over two listing pages of the
 * provider's, small sync calls so that its event log passes its trim) one or a few a run.
 */
import fc from 'fast-check';
import type { FaultEndpoint } from '../../../stand-ins/gmail.stand-in.ts';
import type { QueueMethod } from './model-queue.ts';

export type Change =
  | { kind: 'add'; inbox: boolean; unread: boolean; reply: number | null }
  | { kind: 'delete'; i: number }
  | { kind: 'read'; i: number; read: boolean }
  | { kind: 'archive'; i: number }
  | { kind: 'unarchive'; i: number };
export interface Fate {
  /** 0 = the notification is lost, 2 = delivered twice. */
  copies: number;
  /** Ticks before it becomes deliverable. */
  delay: number;
}
export type Op =
  | { kind: 'change'; change: Change; fate: Fate }
  | { kind: 'midSync'; change: Change; fate: Fate }
  /** A backlog: pages × this many new messages at once (1,000 with 50-message pages), then one notification. */
  | { kind: 'flood'; pages: number; fate: Fate }
  | { kind: 'poll'; instance: number; take: number; order: number }
  | { kind: 'pollBoth'; order: number }
  /** The worker loops run what is ready; `late`: first, time passes until the next deferred job is due. */
  | { kind: 'work'; late: boolean }
  /** The sync route on an instance races a job the loops start. */
  | { kind: 'routeRace'; instance: number }
  | { kind: 'tick'; n: number }
  | { kind: 'expire' }
  | { kind: 'fault'; endpoint: FaultEndpoint; status: number; afterCalls: number; times: number }
  | { kind: 'queueFault'; method: QueueMethod }
  /** A sync whose process died holding the account's lease (and `recover`: its lease runs out). */
  | { kind: 'crash' }
  | { kind: 'recover' }
  /** The next sync's lease runs out after its read: the other instance's route sync commits first. */
  | { kind: 'steal' }
  /**
   * The next sync stalls after its read, its lease lost, its job's heartbeat gone: the job is
   * handed on (a retry), a notification brings it forward, another worker (either instance)
   * syncs and commits while the first still holds its plan; its commit is refused.
   */
  | { kind: 'takeover' }
  | { kind: 'resync' }
  /** The user opens a stored thread while a worker syncs: bodies fetched outside any transaction. */
  | { kind: 'open'; i: number }
  /** A new message the provider always fails for (until the weather clears). */
  | { kind: 'poison'; fate: Fate }
  | { kind: 'noise'; garbage: boolean; fate: Fate }
  /** An instance's worker loop stops (its jobs commit the call they are in) and starts again: a deploy. */
  | { kind: 'restart'; instance: number };

export interface Schedule {
  seedCount: number;
  initialSync: boolean;
  /** The account's sign-in queued its first sync job (as completeSignIn does). */
  signIn: boolean;
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
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      inbox: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      unread: fc.boolean(),
      reply: fc.option(idx, { nil: null, freq: 2 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), i: idx }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), i: idx, read: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('archive' as const), i: idx }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unarchive' as const), i: idx }) },
);
const fateArb: fc.Arbitrary<Fate> = fc.record({
  copies: fc.constantFrom(1, 1, 1, 1, 0, 2, 2),
  delay: fc.constantFrom(0, 0, 0, 1, 2, 4),
});
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 7, arbitrary: fc.record({ kind: fc.constant('change' as const), change: changeArb, fate: fateArb }) },
  {
    weight: 7,
    arbitrary: fc.record({
      kind: fc.constant('poll' as const),
      instance: fc.constantFrom(0, 0, 1),
      take: fc.integer({ min: 1, max: 6 }),
      order: fc.nat(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pollBoth' as const), order: fc.nat() }) },
  { weight: 7, arbitrary: fc.record({ kind: fc.constant('work' as const), late: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('routeRace' as const), instance: fc.constantFrom(0, 1) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), n: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('midSync' as const), change: changeArb, fate: fateArb }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('flood' as const), pages: fc.constantFrom(5, 20), fate: fateArb }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
  {
    // A failed call fails its job (a retry, with backoff) but for a message's fetch (set aside); a 429 defers it.
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      endpoint: fc.constantFrom<FaultEndpoint>(
        'history.list',
        'history.list',
        'messages.get',
        'messages.list',
        'profile',
      ),
      status: fc.constantFrom(500, 503, 429),
      afterCalls: fc.nat(2),
      times: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('queueFault' as const),
      method: fc.constantFrom<QueueMethod>('pull', 'ack', 'retryLater'),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'crash' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'recover' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'steal' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'takeover' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resync' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('open' as const), i: idx }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('poison' as const), fate: fateArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('noise' as const), garbage: fc.boolean(), fate: fateArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), instance: fc.constantFrom(0, 1) }) },
);
export const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  seedCount: fc.nat(4),
  initialSync: fc.boolean(),
  signIn: fc.boolean(),
  page: fc.constantFrom(1, 2, 3, 50),
  rounds: fc.constantFrom(1, 2, 4),
  batch: fc.constantFrom(1, 3, 10),
  reportAttempts: fc.boolean(),
  deltaOnlyLabels: fc.boolean(),
  ops: fc.array(opArb, { minLength: 1, maxLength: 22 }),
});

/** The provider's listing page (messages.list, server/domain/mail/sync/listing-plan.ts LISTING_PAGE): a big inbox spans three. */
export const PROVIDER_LISTING_PAGE = 500;

/**
 * A big schedule: an inbox over two listing pages, synced from sign-in by the jobs in calls of 5
 * or 6 messages (some 170–210 commits of two events each: the event log passes its trim), then
 * the usual ops, history expiry (a resync: its unread ids and its inbox over the pages) among them.
 */
export const bigScheduleArb: fc.Arbitrary<Schedule> = fc.record({
  seedCount: fc.integer({ min: 2 * PROVIDER_LISTING_PAGE + 1, max: 2 * PROVIDER_LISTING_PAGE + 40 }),
  initialSync: fc.constant(false),
  signIn: fc.constant(true),
  page: fc.constantFrom(5, 6),
  rounds: fc.constantFrom(2, 4),
  batch: fc.constantFrom(3, 10),
  reportAttempts: fc.boolean(),
  deltaOnlyLabels: fc.boolean(),
  ops: fc.tuple(fc.array(opArb, { minLength: 2, maxLength: 8 }), fc.array(opArb, { maxLength: 6 })).map(([a, b]) => [
    ...a,
    { kind: 'expire' as const },
    {
      kind: 'change' as const,
      change: { kind: 'add' as const, inbox: true, unread: true, reply: null },
      fate: { copies: 1, delay: 0 },
    },
    ...b,
  ]),
});
