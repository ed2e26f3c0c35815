/**
 * The `sessions` table's one writer. A row is keyed by the sha256 of the cookie's random key
 * (a database leak yields no usable cookie), holds the session's JSON and expires after
 * SESSION_IDLE_MS without use; a session also ends SESSION_ABSOLUTE_MS after sign-in. The
 * koa-session store (http/sessions.ts) reads and saves through `sessionRows`; disconnect ends
 * an account's sessions, the purge job the expired ones, and the event streams ask which of
 * theirs ended. Times are the database's clock.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { Session } from '../../../db/entities/index.ts';
import { preparedStatement, type RunPrepared } from '../prepared-sql.ts';

export const SESSION_IDLE_MS = 2 * 24 * 3600 * 1000;
export const SESSION_ABSOLUTE_MS = 30 * 24 * 3600 * 1000;

/** The live sessions among some ids, each row's data as JSON text. */
const READ_SESSIONS = preparedStatement(
  'mia_read_sessions',
  'select id, data::text as data from sessions where id = any(?::text[]) and expires_at > now()',
);

/** The revocation check of every save: the account still exists and has not ended its sessions since this one signed in. */
const NOT_REVOKED = `(?::uuid is null
  or exists (select 1 from accounts a where a.id = ?::uuid and (a.sessions_revoked_at is null or a.sessions_revoked_at < ?)))`;

/** A session as saved: `ttlMs` from now; `signedInAt` for the revocation check. */
export interface SessionRow {
  id: string;
  accountId: string | null;
  data: string;
  ttlMs: string;
  signedInAt: Date;
}

export function sessionRows(orm: MikroORM, run: RunPrepared) {
  const sql = (q: string, params: unknown[]) => orm.em.getConnection().execute(q, params);
  return {
    /** The live rows among these ids: id -> the data as JSON text. */
    async read(ids: string[]): Promise<Map<string, string>> {
      const rows = await run<{ id: string; data: string }>(READ_SESSIONS, [ids]);
      return new Map(rows.map((r) => [r.id, r.data]));
    },
    /** Renews a live row only: one signed out, revoked or expired meanwhile stays gone. */
    async renew(r: SessionRow): Promise<void> {
      await sql(
        `update sessions set account_id = ?::uuid, data = ?, expires_at = now() + (? || ' milliseconds')::interval
          where id = ? and expires_at > now() and ${NOT_REVOKED}`,
        [r.accountId, r.data, r.ttlMs, r.id, r.accountId, r.accountId, r.signedInAt],
      );
    },
    /** Writes a new key's row, unless its account ended its sessions after it signed in or is gone. */
    async insert(r: SessionRow): Promise<void> {
      await sql(
        `insert into sessions (id, account_id, data, expires_at)
         select ?, ?::uuid, ?, now() + (? || ' milliseconds')::interval where ${NOT_REVOKED}
         on conflict (id) do update set account_id = excluded.account_id, data = excluded.data, expires_at = excluded.expires_at`,
        [r.id, r.accountId, r.data, r.ttlMs, r.accountId, r.accountId, r.signedInAt],
      );
    },
    async destroy(id: string): Promise<void> {
      await sql('delete from sessions where id = ?', [id]);
    },
  };
}

/** Ends every session of the account (disconnect; in its transaction, after the account row's lock). */
export async function endAccountSessions(em: EntityManager, accountId: string): Promise<void> {
  await em.nativeDelete(Session, { account: accountId });
}

/** Deletes the expired rows (the purge job): an expired row still holds an account id, an address and a CSRF token. How many. */
export async function purgeExpiredSessions(em: EntityManager): Promise<number> {
  const rows = await em.execute<{ n: number }[]>(
    'with d as (delete from sessions where expires_at < now() returning 1) select count(*)::int as n from d',
  );
  return rows[0]?.n ?? 0;
}

/**
 * The event streams' sessions that ended (signed out, replaced by a new sign-in, expired idle
 * or past SESSION_ABSOLUTE_MS, purged, revoked): one statement for all of an instance's open
 * streams, run on its heartbeat and after its LISTEN connection came back, so a stream ends
 * with its session even when no notification said so. A stream knows its session by the
 * stream key, which the expression below derives from the row's CSRF token exactly as
 * `sessionStreamKey` (server/domain/events/events.service.ts) does: sha256 of `mail-events:<token>`,
 * base64url, 22 characters. Each pair is looked up by the account's index on `sessions`.
 */
export async function endedStreamSessions(
  orm: MikroORM,
  open: readonly { accountId: string; sessionKey: string }[],
): Promise<string[]> {
  if (!open.length) return [];
  const rows = (await orm.em.getConnection().execute(
    `select distinct o.s as key from jsonb_to_recordset(?::jsonb) as o(a uuid, s text)
      where not exists (
        select 1 from sessions x
         where x.account_id = o.a and x.expires_at > now()
           and (x.data->>'signedInAt')::bigint > (extract(epoch from now()) * 1000)::bigint - ?
           and left(translate(encode(sha256(convert_to('mail-events:' || (x.data->>'csrfToken'), 'UTF8')), 'base64'), '+/', '-_'), 22) = o.s)`,
    [JSON.stringify(open.map((o) => ({ a: o.accountId, s: o.sessionKey }))), SESSION_ABSOLUTE_MS],
  )) as { key: string }[];
  return rows.map((r) => r.key);
}
