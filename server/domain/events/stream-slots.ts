/**
 * The cluster's open event streams (`event_streams`), one row per stream: what the stream
 * limits count, so that they hold across instances sharing only PostgreSQL. A row is taken
 * under a per-account transaction lock (the count and the insert see every committed row),
 * kept alive by its instance's heartbeat, and deleted when its stream ends; a row whose
 * instance died lapses at `expires_at` and is swept by the next claim or heartbeat.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { select, type Sql } from '../sql.ts';

export interface Slot {
  id: string;
  accountId: string;
  sessionKey: string;
  instance: string;
}

export interface SlotLimits {
  perSession: number;
  perAccount: number;
  /** A row not refreshed for this long no longer counts (ms). */
  ttlMs: number;
}

/** Takes a place for the stream; false when the session or the account already holds its limit. */
export async function claimSlot(em: EntityManager, slot: Slot, limits: SlotLimits): Promise<boolean> {
  return em.transactional(async (tx) => {
    // The account row first (key share), as every writer of its rows: a deletion in flight is waited for, not met.
    const [account] = await select<{ id: string }>(tx, 'select id from accounts where id = ? for key share', [
      slot.accountId,
    ]);
    if (!account) return false;
    // A separate statement: the count below takes its snapshot after the lock, so it sees every claim before it.
    await tx.execute(`select pg_advisory_xact_lock(hashtextextended('event_streams:' || ?::text, 0))`, [
      slot.accountId,
    ]);
    const taken = await select<{ id: string }>(
      tx,
      `with lapsed as (delete from event_streams where account_id = ?::uuid and expires_at <= now()),
       open as (select count(*) filter (where session_key = ?) as s, count(*) as a
                  from event_streams where account_id = ?::uuid and expires_at > now())
       insert into event_streams (id, account_id, session_key, instance, expires_at)
       select ?::uuid, ?::uuid, ?, ?::uuid, now() + make_interval(secs => ?) from open where open.s < ? and open.a < ?
       returning id`,
      [
        slot.accountId,
        slot.sessionKey,
        slot.accountId,
        slot.id,
        slot.accountId,
        slot.sessionKey,
        slot.instance,
        limits.ttlMs / 1000,
        limits.perSession,
        limits.perAccount,
      ],
    );
    return taken.length > 0;
  });
}

/**
 * The instance's heartbeat: its open streams' rows live `ttlMs` more (one statement for all
 * of them), and rows other instances stopped refreshing are swept.
 */
export async function refreshSlots(em: Sql, instance: string, ids: string[], ttlMs: number): Promise<void> {
  await em.execute(
    `with kept as (update event_streams set expires_at = now() + make_interval(secs => ?)
                    where id in (select x::uuid from jsonb_array_elements_text(?::jsonb) x))
     delete from event_streams where expires_at <= now() and instance <> ?::uuid`,
    [ttlMs / 1000, JSON.stringify(ids), instance],
  );
}

/** The streams ended: their places are free on every instance. */
export async function releaseSlots(
  em: Sql & { transactional<T>(fn: (tx: Sql) => Promise<T>): Promise<T> },
  ids: string[],
): Promise<void> {
  const json = JSON.stringify(ids);
  // The accounts first (key share, in id order), as every writer an account's deletion can meet: the
  // deletion's cascade and a batch of places of one account then queue instead of deadlocking.
  await em.transactional(async (tx) => {
    await tx.execute(
      `select 1 from accounts where id in (select s.account_id from event_streams s where s.id in (select x::uuid from jsonb_array_elements_text(?::jsonb) x))
       order by id for key share`,
      [json],
    );
    await tx.execute(
      'delete from event_streams where id in (select x::uuid from jsonb_array_elements_text(?::jsonb) x)',
      [json],
    );
  });
}

/** The instance stops: every place it held is free. */
export async function releaseInstance(em: Sql, instance: string): Promise<void> {
  await em.execute('delete from event_streams where instance = ?::uuid', [instance]);
}
