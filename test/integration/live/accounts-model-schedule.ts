/**
 * The schedules of the accounts model (accounts-model.test.ts): what happens to several
 * accounts' mailboxes, their notifications and their users, step by step. Small ones over three
 * accounts on a small worker loop; at production sizes, ten accounts (one with an inbox over two
 * listing pages) on the production loop's 8 workers × 8 jobs, CALLS_PER_JOB calls of SYNC_BATCH
 * messages.
 */
import fc from 'fast-check';
import { SYNC_BATCH } from '../../../server/domain/mail/sync/sync.service.ts';
import { BATCH, CALLS_PER_JOB, WORKERS } from '../../../server/jobs/mail-sync.job.ts';
import type { FaultEndpoint } from '../../../stand-ins/gmail.stand-in.ts';

export type Change =
  | { kind: 'add'; inbox: boolean; unread: boolean; reply: number | null }
  | { kind: 'delete' | 'archive' | 'unarchive'; i: number }
  | { kind: 'read'; i: number; read: boolean };
export interface Fate {
  copies: number;
  delay: number;
}
export type Op =
  | { kind: 'change' | 'midSync'; a: number; change: Change; fate: Fate }
  | { kind: 'flood'; a: number; n: number }
  | { kind: 'poll'; take: number; order: number }
  | { kind: 'wait' }
  | { kind: 'tick'; n: number }
  | { kind: 'expire' | 'crash' | 'disconnect' | 'delete' | 'reconnect'; a: number }
  | { kind: 'route'; a: number; full: boolean }
  | { kind: 'open'; a: number; i: number }
  | { kind: 'fault'; endpoint: FaultEndpoint; status: number; afterCalls: number; times: number }
  | { kind: 'recover' }
  | { kind: 'restart' };
export interface Schedule {
  /** Messages each account's mailbox starts with (one account per entry). */
  seeds: number[];
  /** The worker loop: engine workers × jobs per fetch. */
  concurrency: { workers: number; batch: number };
  page: number;
  rounds: number;
  deltaOnlyLabels: boolean;
  ops: Op[];
}

const idx = fc.nat(30);
const changeArb: fc.Arbitrary<Change> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      inbox: fc.constantFrom(true, true, false),
      unread: fc.boolean(),
      reply: fc.option(idx, { nil: null, freq: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), i: idx }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('archive' as const), i: idx }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unarchive' as const), i: idx }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), i: idx, read: fc.boolean() }) },
);
const fateArb: fc.Arbitrary<Fate> = fc.record({
  copies: fc.constantFrom(1, 1, 1, 0, 2),
  delay: fc.constantFrom(0, 0, 1, 3),
});
function opsOf(accounts: number): fc.Arbitrary<Op> {
  const acct = fc.nat(accounts - 1);
  return fc.oneof(
    {
      weight: 8,
      arbitrary: fc.record({ kind: fc.constant('change' as const), a: acct, change: changeArb, fate: fateArb }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('midSync' as const), a: acct, change: changeArb, fate: fateArb }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('flood' as const), a: acct, n: fc.constantFrom(20, 60) }) },
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('poll' as const),
        take: fc.integer({ min: 1, max: 8 }),
        order: fc.nat(),
      }),
    },
    { weight: 4, arbitrary: fc.constant({ kind: 'wait' as const }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), n: fc.integer({ min: 1, max: 8 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('expire' as const, 'crash' as const), a: acct }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('disconnect' as const), a: acct }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), a: acct }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('reconnect' as const), a: acct }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('route' as const), a: acct, full: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('open' as const), a: acct, i: idx }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('fault' as const),
        endpoint: fc.constantFrom<FaultEndpoint>('history.list', 'messages.get', 'messages.list', 'profile'),
        status: fc.constantFrom(500, 503, 429),
        afterCalls: fc.nat(2),
        times: fc.integer({ min: 1, max: 2 }),
      }),
    },
    { weight: 1, arbitrary: fc.constantFrom({ kind: 'recover' as const }, { kind: 'restart' as const }) },
  );
}

/** Three accounts, small mailboxes and calls, a small loop (2 workers × 3 jobs). */
export const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  seeds: fc.tuple(fc.nat(4), fc.nat(4), fc.nat(30)),
  concurrency: fc.constant({ workers: 2, batch: 3 }),
  page: fc.constantFrom(2, 3, 50),
  rounds: fc.constantFrom(1, 2, 4),
  deltaOnlyLabels: fc.boolean(),
  ops: fc.array(opsOf(3), { minLength: 1, maxLength: 18 }),
});

/** The provider's listing page (messages.list: listing-plan.ts LISTING_PAGE). */
const LISTING_PAGE = 500;
export const PRODUCTION_ACCOUNTS = 10;

/** Production sizes: ten accounts, one over two listing pages, the production loop and calls. */
export const productionScheduleArb: fc.Arbitrary<Schedule> = fc.record({
  seeds: fc
    .tuple(
      fc.integer({ min: 2 * LISTING_PAGE + 1, max: 2 * LISTING_PAGE + 60 }),
      fc.array(fc.nat(80), { minLength: PRODUCTION_ACCOUNTS - 1, maxLength: PRODUCTION_ACCOUNTS - 1 }),
    )
    .map(([big, rest]) => [big, ...rest]),
  concurrency: fc.constant({ workers: WORKERS, batch: BATCH }),
  page: fc.constant(SYNC_BATCH),
  rounds: fc.constant(CALLS_PER_JOB),
  deltaOnlyLabels: fc.boolean(),
  ops: fc.array(opsOf(PRODUCTION_ACCOUNTS), { minLength: 10, maxLength: 30 }),
});
