/**
 * The inbox thread list: newest first through the partial list index, each thread with the
 * analysis of its latest message (`mail_threads.latest_message_id` joined to the analysis by
 * its unique key), filtered by priority, reply status and unread. One prepared statement per
 * page and filter shape (the pool plans statements once, generically: a shape of its own
 * keeps each filter's plan on its index). Unfiltered, the total is the per-account counter
 * (mail_inbox_counts); filtered, it counts the matches in the same statement and snapshot.
 */
import type { ThreadList, ThreadListInput } from '../../../../shared/schemas/mail.ts';
import { preparedStatement, type PreparedStatement, type RunPrepared } from '../../prepared-sql.ts';

type Filters = Pick<ThreadListInput, 'priority' | 'replyStatus' | 'unread'>;
export type ListPage = { limit: number; offset: number } & Filters;

const COLUMNS = `t.id, t.provider_thread_id, t.subject, t.snippet, t.is_unread, t.last_from_name, t.last_from_address,
         to_char(coalesce(t.last_message_at, t.created_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last_at,
         a.priority, a.reply_status, a.confidence, a.corrected_at is not null as corrected`;

/**
 * The unfiltered page and the total (parameters: account, account, limit, offset). The time
 * comes formatted as the API writes it, which spares parsing and formatting a date per row.
 * Exported so that the benchmark's bare handler serves exactly the same SQL.
 */
export const LIST_THREADS = preparedStatement(
  'mia_list_threads_v2',
  `select c.total, t.* from (select coalesce((select total from mail_inbox_counts where account_id = ?), 0) as total) c
     left join lateral (
       select ${COLUMNS}
       from mail_threads t left join analyses a on a.message_id = t.latest_message_id
       where t.account_id = ? and t.in_inbox order by t.last_message_at desc, t.id desc limit ? offset ?
     ) t on true`,
);

export const listThreadsParams = (accountId: string, page: { limit: number; offset: number }): unknown[] => [
  accountId,
  accountId,
  page.limit,
  page.offset,
];

/** Each filter once: its letter in the statement's name, and its condition on one value. */
const FILTERS = [
  { key: 'unread', letter: 'u', sql: 't.is_unread = ?::boolean' },
  { key: 'priority', letter: 'p', sql: 'a.priority = any(?::text[])' },
  { key: 'replyStatus', letter: 'r', sql: 'a.reply_status = any(?::text[])' },
] as const;
const given = (f: Filters) => FILTERS.filter((x) => f[x.key] !== undefined);
const shapeOf = (f: Filters) =>
  given(f)
    .map((x) => x.letter)
    .join('');

const filtered = new Map<string, PreparedStatement>();
/** The statement of a filter shape (at most seven), made once. */
function filteredStatement(f: Filters): PreparedStatement {
  const shape = shapeOf(f);
  let statement = filtered.get(shape);
  if (!statement) {
    // An unread filter reads the unread partial index; the others join the analyses as they go.
    const where = ['t.account_id = ? and t.in_inbox', ...given(f).map((x) => x.sql)].join(' and ');
    const from = `mail_threads t ${f.priority || f.replyStatus ? 'join' : 'left join'} analyses a on a.message_id = t.latest_message_id`;
    statement = preparedStatement(
      `mia_list_threads_${shape}`,
      `select c.total, t.* from (select count(*)::int as total from ${from} where ${where}) c
     left join lateral (
       select ${COLUMNS} from ${from} where ${where} order by t.last_message_at desc, t.id desc limit ? offset ?
     ) t on true`,
    );
    filtered.set(shape, statement);
  }
  return statement;
}

export interface ThreadListRow {
  total: number;
  id: string | null;
  provider_thread_id: string;
  subject: string;
  snippet: string;
  is_unread: boolean;
  last_from_name: string;
  last_from_address: string;
  last_at: string;
  priority: string | null;
  reply_status: string | null;
  confidence: number | null;
  corrected: boolean | null;
}

type Summary = ThreadList['threads'][number];

export function toThreadList(rows: ThreadListRow[], page: { limit: number; offset: number }): ThreadList {
  const total = rows[0]?.total ?? 0;
  const threads: Summary[] = [];
  for (const r of rows) {
    if (r.id === null) continue;
    const analysis =
      r.priority === null
        ? null
        : ({
            priority: r.priority,
            replyStatus: r.reply_status,
            confidence: Number(r.confidence),
            corrected: r.corrected === true,
          } as Summary['analysis']);
    threads.push({
      id: r.id,
      mailThreadId: r.provider_thread_id,
      subject: r.subject,
      snippet: r.snippet,
      fromName: r.last_from_name,
      fromAddress: r.last_from_address,
      lastMessageAt: r.last_at,
      isUnread: r.is_unread,
      analysis,
    });
  }
  return { threads, total, hasMore: page.offset + threads.length < total };
}

/** One statement, read-only, no entities: a prepared statement, no EntityManager needed. */
export async function listThreads(run: RunPrepared, accountId: string, page: ListPage): Promise<ThreadList> {
  if (!shapeOf(page))
    return toThreadList(await run<ThreadListRow>(LIST_THREADS, listThreadsParams(accountId, page)), page);
  const values = given(page).map((x) => page[x.key]);
  return toThreadList(
    await run<ThreadListRow>(filteredStatement(page), [
      accountId,
      ...values,
      accountId,
      ...values,
      page.limit,
      page.offset,
    ]),
    page,
  );
}
