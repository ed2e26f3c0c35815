/**
 * Anonymous analytics events (no session: `page_view` from anyone) are stored within a budget
 * of the whole deployment per minute (ANALYTICS_ANONYMOUS_PER_MINUTE), so that the table's
 * growth is bounded by a setting rather than by how many addresses a caller holds (each /64
 * has its own rate limit). Beyond the budget an event is accepted and dropped (the contract's
 * 200 `{ok: true}`), and counted.
 *
 * The count is one row of `analytics_budget` (db/migrations/Migration20261202104500.ts), the
 * table's only SQL: the statement that adds a batch's events to the minute's count and
 * inserts those that still fit is the same statement, so every instance sees every other's
 * count under the row's lock and the events stored in one minute never pass the budget.
 * The row holds the current minute only (a newer minute restarts the count; an instance whose
 * clock lags adds to the newer minute's), so the table never grows and needs no purge.
 *
 * Cheap under a flood: concurrent events of an instance go in one statement (one in flight,
 * so the row is contended by at most one statement per instance), and once an instance has
 * seen its minute's budget spent it drops that minute's further events without a statement.
 */
import { oneInFlightLoader } from '../../infra/batch-loader.ts';
import type { PreparedStatement, RunPrepared } from '../prepared-sql.ts';

export interface AnonymousEvent {
  name: string;
  anonymousId: string | null;
  properties: Record<string, unknown> | null;
}

export interface AnonymousEventsOptions {
  prepared: RunPrepared;
  /** Events stored per minute across the deployment; 0 stores none. */
  perMinute: number;
  /** The clock the minute is read from (tests move it). */
  now?: () => Date;
  /** An event dropped past the budget. */
  onDrop?: () => void;
}

const SCOPE = 'anonymous';

// $1 scope, $2 minute, $3 the batch's size, $4 names, $5 anonymous ids, $6 properties (JSON text), $7 budget.
const STORE_WITHIN_BUDGET: PreparedStatement = {
  name: 'mia-analytics-anonymous-store',
  text: `with slot as (
    insert into analytics_budget as b (scope, minute, events) values ($1, $2::bigint, $3::int)
    on conflict (scope) do update set
      events = case when excluded.minute > b.minute then excluded.events else b.events + excluded.events end,
      minute = greatest(b.minute, excluded.minute)
    returning events
  ), kept as (
    insert into analytics_events (name, anonymous_id, properties)
    select e.name, e.anonymous_id, e.properties::jsonb
      from slot, unnest($4::varchar[], $5::uuid[], $6::text[]) with ordinality as e(name, anonymous_id, properties, n)
     where slot.events - $3::int + e.n <= $7::int
     order by e.n
    returning 1
  )
  select (select events from slot) as events, (select count(*) from kept)::int as stored`,
};

export interface AnonymousEvents {
  /** Stores the event if the minute's budget has room; false: dropped (and counted). */
  record(event: AnonymousEvent): Promise<boolean>;
}

export function createAnonymousEvents(opts: AnonymousEventsOptions): AnonymousEvents {
  const now = opts.now ?? (() => new Date());
  const minuteOf = () => Math.floor(now().getTime() / 60_000);
  /** The minute this instance saw the budget spent in: its events are dropped here. */
  let spentMinute: number | undefined;

  const batches = oneInFlightLoader<AnonymousEvent, boolean>(async (events) => {
    const minute = minuteOf();
    if (spentMinute === minute) return events.map(() => false);
    const [row] = await opts.prepared<{ events: number; stored: number }>(STORE_WITHIN_BUDGET, [
      SCOPE,
      minute,
      events.length,
      events.map((e) => e.name),
      events.map((e) => e.anonymousId),
      events.map((e) => (e.properties ? JSON.stringify(e.properties) : null)),
      opts.perMinute,
    ]);
    if (row!.events >= opts.perMinute) spentMinute = minute;
    // The statement keeps the first `stored` of the batch, in order.
    return events.map((_, i) => i < row!.stored);
  });

  return {
    async record(event) {
      const stored = opts.perMinute > 0 && spentMinute !== minuteOf() && (await batches.load(event));
      if (!stored) opts.onDrop?.();
      return stored;
    },
  };
}
