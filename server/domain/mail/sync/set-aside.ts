/**
 * The records of messages a sync could not fetch or read (mail_set_aside): set aside with the
 * call's commit, retried on its own with a growing delay (1 minute, doubling to 6 hours).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { executeBound } from '../../bound-sql.ts';

/** A message the provider would not return, or that could not be read: recorded and retried later. */
export interface SetAside {
  providerMessageId: string;
  reason: string;
}

const uniq = <T>(xs: Iterable<T>) => [...new Set(xs)];

/** Minutes before a set-aside message is tried again, doubling per attempt up to six hours. */
const SET_ASIDE_RETRY_SQL = `now() + make_interval(mins => least(360, (2 ^ least(s.attempts, 9))::int))`;

/** Records messages set aside (attempts counting up), and drops the records of those retried successfully or gone since (`cleared`). */
export async function recordSetAside(
  em: EntityManager,
  accountId: string,
  setAside: SetAside[],
  cleared: string[] = [],
): Promise<void> {
  if (cleared.length) {
    await em.execute(
      'delete from mail_set_aside where account_id = ? and provider_message_id = any(array[?]::text[])',
      [accountId, uniq(cleared)],
      'run',
    );
  }
  if (!setAside.length) return;
  const payload = setAside.map((x) => ({ pmid: x.providerMessageId, reason: x.reason.slice(0, 64) }));
  await executeBound(
    em,
    `insert into mail_set_aside as s (account_id, provider_message_id, reason, retry_after)
     select ?::uuid, x.pmid, x.reason, now() + interval '1 minute' from jsonb_to_recordset(?::jsonb) as x(pmid text, reason text)
     on conflict (account_id, provider_message_id) do update set attempts = s.attempts + 1, reason = excluded.reason, retry_after = ${SET_ASIDE_RETRY_SQL}`,
    [accountId, JSON.stringify(payload)],
  );
}

/** Which of these messages already failed before (have a record). */
export async function recordedFailures(em: EntityManager, accountId: string, ids: string[]): Promise<string[]> {
  const rows = await em.execute<{ pmid: string }[]>(
    'select provider_message_id as pmid from mail_set_aside where account_id = ? and provider_message_id = any(array[?]::text[])',
    [accountId, ids],
  );
  return rows.map((r) => r.pmid);
}

/** Set-aside messages of the account due for another try (oldest first). */
export async function dueSetAside(em: EntityManager, accountId: string, limit: number): Promise<string[]> {
  const rows = await em.execute<{ pmid: string }[]>(
    'select provider_message_id as pmid from mail_set_aside where account_id = ? and retry_after <= now() order by retry_after limit ?',
    [accountId, limit],
  );
  return rows.map((r) => r.pmid);
}
