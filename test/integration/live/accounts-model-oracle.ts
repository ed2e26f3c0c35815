/**
 * The whole-store oracle of the accounts model (accounts-model.test.ts): beyond the inbox
 * (model-world.ts's assertInboxMatches), every stored row of an account against the provider,
 * the threads' aggregates against their messages, what a user who opens each inbox thread
 * sees, and, for an account deleted, that nothing of it is left.
 */
import assert from 'node:assert/strict';
import { assertInboxMatches, modelSql, type ModelWorld } from './model-world.ts';

/** What the oracle looked at over a run (printed by the test, so a run that checks nothing shows). */
export const oracleTally = { rows: 0, rowsOutsideInbox: 0, threadsOpened: 0, deletedAccounts: 0 };

/** Every table that holds an account's rows (each references accounts with ON DELETE CASCADE). */
const ACCOUNT_TABLES = [
  'mail_messages',
  'mail_threads',
  'sync_states',
  'mail_listing',
  'mail_set_aside',
  'mail_inbox_counts',
  'mail_events',
  'analyses',
  'drafts',
  'credentials',
  'sessions',
];

/**
 * Every stored message still exists at the provider, in the thread the provider has it in, with
 * its labels (read state and inbox included); every thread row's aggregates are its messages'.
 */
export async function assertEveryRow(w: ModelWorld, accountId: string, email: string, when: string): Promise<void> {
  const sql = modelSql(w.app);
  const rows = await sql<{ pid: string; ptid: string; label_ids: string[] }>(
    `select m.provider_message_id as pid, t.provider_thread_id as ptid, m.label_ids
       from mail_messages m join mail_threads t on t.id = m.thread_id where m.account_id = ?`,
    [accountId],
  );
  oracleTally.rows += rows.length;
  oracleTally.rowsOutsideInbox += rows.filter((r) => !r.label_ids.includes('INBOX')).length;
  for (const r of rows) {
    const upstream = w.gmail.getMessage(email, r.pid);
    assert.ok(upstream, `${when}: stored message ${r.pid} still exists at the provider`);
    assert.equal(r.ptid, upstream.threadId, `${when}: stored message ${r.pid} is in the provider's thread`);
    assert.deepEqual(
      [...r.label_ids].sort(),
      [...upstream.labelIds].sort(),
      `${when}: stored message ${r.pid} has the provider's labels`,
    );
  }
  const drift = await sql<{ ptid: string }>(
    `select t.provider_thread_id as ptid from mail_threads t
       join (select thread_id, bool_or(is_unread) as unread, bool_or(in_inbox) as inbox,
               coalesce(max(sent_at) filter (where in_inbox), max(sent_at)) as last_at
             from mail_messages where account_id = ? group by thread_id) a on a.thread_id = t.id
      where t.account_id = ? and (t.is_unread <> a.unread or t.in_inbox <> a.inbox or t.last_message_at is distinct from a.last_at)`,
    [accountId, accountId],
  );
  assert.deepEqual(drift, [], `${when}: every thread row's read state, inbox flag and date are its messages'`);
}

/**
 * Opens every inbox thread as the user would (GET /api/mail/threads/{id}: bodies fetched on
 * first open): it lists each of the thread's inbox messages with the provider's read state and
 * a body, and nothing the provider no longer has in that thread.
 */
export async function assertThreadDetails(
  w: ModelWorld,
  accountId: string,
  email: string,
  when: string,
): Promise<void> {
  const sql = modelSql(w.app);
  const threads = await sql<{ id: string; ptid: string }>(
    'select id, provider_thread_id as ptid from mail_threads where account_id = ? and in_inbox',
    [accountId],
  );
  const upstream = w.gmail.messages(email);
  for (const t of threads) {
    const detail = await w.app.container.services.threads.detail(w.app.container.orm.em.fork(), accountId, t.id);
    oracleTally.threadsOpened++;
    assert.equal(detail.mailThreadId, t.ptid, `${when}: thread ${t.ptid} detail names its thread`);
    const ids = await sql<{ id: string; pid: string }>(
      'select id, provider_message_id as pid from mail_messages where thread_id = ?',
      [t.id],
    );
    const pidOf = new Map(ids.map((r) => [r.id, r.pid]));
    const shown = detail.messages.map((m) => ({
      pid: pidOf.get(m.id),
      unread: m.isUnread,
      hasBody: m.bodyText.length > 0 || m.bodyHtml.length > 0,
    }));
    const inThread = upstream.filter((m) => m.threadId === t.ptid);
    for (const s of shown) {
      const m = inThread.find((x) => x.id === s.pid);
      assert.ok(m, `${when}: thread ${t.ptid} shows message ${s.pid}, which the provider has in it`);
      assert.equal(
        s.unread,
        m.labelIds.includes('UNREAD'),
        `${when}: message ${s.pid} shows the provider's read state`,
      );
      assert.ok(s.hasBody, `${when}: message ${s.pid} shows a body`);
    }
    const shownIds = new Set(shown.map((s) => s.pid));
    for (const m of inThread)
      assert.ok(shownIds.has(m.id), `${when}: thread ${t.ptid} shows its message ${m.id} (${m.labelIds.join(' ')})`);
    assert.equal(
      detail.isUnread,
      shown.some((s) => s.unread),
      `${when}: thread ${t.ptid} is unread exactly when a message it shows is`,
    );
  }
}

/** The connected account's whole store: inbox, list, every row, every inbox thread opened. */
export async function assertAccountMatches(
  w: ModelWorld,
  accountId: string,
  email: string,
  when: string,
): Promise<void> {
  await assertInboxMatches(w, accountId, email, when);
  await assertEveryRow(w, accountId, email, when);
  await assertThreadDetails(w, accountId, email, when);
  // Opening threads stored their other messages: the rows still hold.
  await assertEveryRow(w, accountId, email, `${when}, after the opens`);
}

/** A deleted account leaves no row in any table, and no sync job waits for it. */
export async function assertNothingLeft(w: ModelWorld, accountId: string, when: string): Promise<void> {
  const sql = modelSql(w.app);
  oracleTally.deletedAccounts++;
  for (const table of ['accounts', ...ACCOUNT_TABLES]) {
    const column = table === 'accounts' ? 'id' : 'account_id';
    const [row] = await sql<{ n: number }>(`select count(*)::int as n from ${table} where ${column} = ?`, [accountId]);
    assert.equal(row!.n, 0, `${when}: deleted account ${accountId} has no row in ${table}`);
  }
}
