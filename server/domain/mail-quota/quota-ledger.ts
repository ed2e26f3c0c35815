/**
 * The mail quota's two tables, every statement of them (runtime contract part 3 "Quota"):
 * - `mail_quota_grants`, each account's grants within the provider's window, taken by the
 *   `mail_quota_take` function (db/migrations/Migration20261201230000.ts) in one statement:
 *   it serialises the account's grants across instances, drops the grants that left the
 *   window, and grants or says how long until the call fits;
 * - `mail_quota_days`, the deployment's units per UTC day, method and purpose, added to in one
 *   statement per flush of an instance's counts (providers/gmail-quota.ts).
 * Written by the pacer through this module only; old rows are purged here too.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { QuotaLedger } from '../../providers/gmail-quota.ts';
import { select, type Sql } from '../sql.ts';

/** How long the day ledger is kept (a quarter's spend for the capacity review). */
export const QUOTA_DAYS_KEPT = 92;

export function createQuotaLedger(orm: MikroORM): QuotaLedger {
  return {
    async take({ accountId, lane, want, min, cap, windowMs, reserve }) {
      const [row] = await select<{ granted: number; wait_ms: number }>(
        orm.em.fork(),
        'select granted, wait_ms from mail_quota_take(?::uuid, ?, ?, ?, ?, ?, ?)',
        [accountId, lane, Math.ceil(want), Math.ceil(min), Math.ceil(cap), Math.ceil(windowMs), Math.ceil(reserve)],
      );
      return { granted: row?.granted ?? 0, waitMs: row?.wait_ms ?? windowMs };
    },

    async record(rows, today) {
      const em = orm.em.fork();
      if (rows.length) {
        // One statement for the whole flush (the rows as one JSON parameter: a key appears once per flush).
        await em.execute(
          `insert into mail_quota_days as d (day, method, purpose, units)
             select x.day, x.method, x.purpose, x.units from jsonb_to_recordset(?::jsonb) as x(day date, method varchar, purpose varchar, units bigint)
           on conflict (day, method, purpose) do update set units = d.units + excluded.units`,
          [JSON.stringify(rows)],
        );
      }
      return unitsOfDay(em, today);
    },
  };
}

/** The deployment's units of one UTC day (`YYYY-MM-DD`), every instance's flushed counts. */
export async function unitsOfDay(em: Sql, day: string): Promise<number> {
  const [row] = await select<{ units: string | null }>(
    em,
    'select sum(units)::text as units from mail_quota_days where day = ?::date',
    [day],
  );
  return Number(row?.units ?? 0);
}

/** The day ledger by method and purpose (operators, tests). */
export async function dayByMethod(em: Sql, day: string): Promise<{ method: string; purpose: string; units: number }[]> {
  const rows = await select<{ method: string; purpose: string; units: string }>(
    em,
    'select method, purpose, units::text as units from mail_quota_days where day = ?::date order by method, purpose',
    [day],
  );
  return rows.map((r) => ({ method: r.method, purpose: r.purpose, units: Number(r.units) }));
}

/** Grants of accounts gone quiet (each take drops its own account's old ones) and days past keeping. */
export async function purgeQuota(em: Sql): Promise<number> {
  const [g] = await select<{ n: number }>(
    em,
    `with d as (delete from mail_quota_grants where granted_at < now() - interval '1 hour' returning 1) select count(*)::int as n from d`,
  );
  const [d] = await select<{ n: number }>(
    em,
    `with d as (delete from mail_quota_days where day < (now() at time zone 'utc')::date - ${QUOTA_DAYS_KEPT} returning 1) select count(*)::int as n from d`,
  );
  return (g?.n ?? 0) + (d?.n ?? 0);
}
