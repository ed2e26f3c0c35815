/**
 * Expired sessions and OAuth states are deleted on a schedule (the purge job): an
 * expired session row still holds an account id, an address and a CSRF token, and nothing
 * reads it again. Compared with the database's clock, as the reads are.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

export async function purgeExpired(em: EntityManager): Promise<{ sessions: number; oauthStates: number }> {
  const count = async (sql: string) => ((await em.execute<{ n: number }[]>(`with d as (${sql} returning 1) select count(*)::int as n from d`))[0]?.n ?? 0);
  return {
    sessions: await count('delete from sessions where expires_at < now()'),
    oauthStates: await count('delete from oauth_states where expires_at < now()'),
  };
}
