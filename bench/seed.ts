/**
 * Stored mail written straight into the tables with `insert … select … generate_series`:
 * threads with one message each, newest first one every 37 seconds, a third unread and one
 * in twenty archived (out of the inbox), like a real mailbox. Rows go through every index,
 * constraint and trigger of the schema, exactly as the sync's own writes do.
 */
import type pg from 'pg';

/** Threads (each with one message) for one account; provider ids are prefixed with `prefix`. */
export async function seedThreads(pool: pg.Pool, accountId: string, count: number, prefix: string): Promise<void> {
  if (count <= 0) return;
  await pool.query(
    `/*bench*/ with t as (
       insert into mail_threads (account_id, provider_thread_id, subject, snippet, last_message_at, is_unread, in_inbox)
       select $1::uuid, $2 || g, 'Quarterly planning follow-up #' || g, 'Hi, following up on the numbers we discussed last week: could you have a look before Friday? Thanks ' || g,
              now() - make_interval(secs => g * 37), g % 3 = 0, g % 20 <> 0
       from generate_series(1, $3::int) g
       returning id, provider_thread_id, subject, snippet, last_message_at, is_unread, in_inbox
     )
     insert into mail_messages (account_id, thread_id, provider_message_id, from_name, from_address, subject, snippet, sent_at, is_unread, in_inbox, label_ids)
     select $1::uuid, t.id, 'm' || t.provider_thread_id, 'Bob Sender', 'bob@partner.example', t.subject, t.snippet, t.last_message_at, t.is_unread, t.in_inbox,
            case when t.in_inbox then array['INBOX'] else array[]::text[] end || case when t.is_unread then array['UNREAD'] else array[]::text[] end
     from t`,
    [accountId, prefix, count],
  );
}

/** `accounts` other accounts (no credentials, no session) with `threadsEach` threads each. */
export async function seedOtherAccounts(pool: pg.Pool, accounts: number, threadsEach: number): Promise<void> {
  if (accounts <= 0) return;
  const { rows } = await pool.query<{ id: string; n: number }>(
    `/*bench*/ insert into accounts (sub, email) select 'bench-other-' || g, 'other' || g || '@bench.example' from generate_series(1, $1::int) g
     returning id, substr(sub, 13)::int as n`,
    [accounts],
  );
  // In slices of accounts, so that no single statement gets huge.
  const slice = 100;
  for (let i = 0; i < rows.length; i += slice) {
    const part = rows.slice(i, i + slice);
    await pool.query(
      `/*bench*/ with t as (
         insert into mail_threads (account_id, provider_thread_id, subject, snippet, last_message_at, is_unread, in_inbox)
         select a.id, 'o' || a.n || '-' || g, 'Invoice ' || g || ' of supplier ' || a.n, 'Please find attached the invoice for the services of last month, reference ' || g,
                now() - make_interval(secs => g * 41 + a.n), g % 3 = 0, g % 20 <> 0
         from unnest($1::uuid[], $2::int[]) as a(id, n), generate_series(1, $3::int) g
         returning id, account_id, provider_thread_id, subject, snippet, last_message_at, is_unread, in_inbox
       )
       insert into mail_messages (account_id, thread_id, provider_message_id, from_name, from_address, subject, snippet, sent_at, is_unread, in_inbox, label_ids)
       select t.account_id, t.id, 'm' || t.provider_thread_id, 'Supplier', 'billing@supplier.example', t.subject, t.snippet, t.last_message_at, t.is_unread, t.in_inbox,
              case when t.in_inbox then array['INBOX'] else array[]::text[] end
       from t`,
      [part.map((r) => r.id), part.map((r) => r.n), threadsEach],
    );
  }
}

/** Statistics and the visibility map, as autovacuum would leave them after a bulk load. */
export async function vacuumAnalyze(pool: pg.Pool): Promise<void> {
  for (const table of [
    'accounts',
    'mail_threads',
    'mail_messages',
    'sessions',
    'credentials',
    'sync_states',
    'rate_limits',
  ]) {
    await pool.query(`/*bench*/ vacuum (analyze) ${table}`);
  }
}
