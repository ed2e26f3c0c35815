/**
 * The `oauth_states` table's one writer: a sign-in's state, stored hashed with the hash of
 * the browser's pre-auth nonce and the PKCE verifier; single use (taken, i.e. deleted, on its
 * first presentation, whatever the outcome), short-lived, and purged once expired.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { OAuthState } from '../../../db/entities/index.ts';
import { sha256hex } from '../hash.ts';

export interface TakenState {
  browserHash: string;
  codeVerifier: string;
  expiresAt: Date;
}

/** Stores a new state (by its hash) and drops the expired ones (housekeeping between purges). */
export async function putState(
  em: EntityManager,
  s: { state: string; browserNonce: string; codeVerifier: string; expiresAt: Date; now: Date },
): Promise<void> {
  em.create(OAuthState, {
    id: sha256hex(s.state),
    browserHash: sha256hex(s.browserNonce),
    codeVerifier: s.codeVerifier,
    expiresAt: s.expiresAt,
  });
  await em.flush();
  await em.nativeDelete(OAuthState, { expiresAt: { $lt: s.now } });
}

/** The state presented, deleted in the same statement (a second presentation finds nothing); null when unknown or already used. */
export async function takeState(em: EntityManager, state: string): Promise<TakenState | null> {
  const rows = await em
    .getConnection()
    .execute('delete from oauth_states where id = ? returning browser_hash, code_verifier, expires_at', [
      sha256hex(state),
    ]);
  const row = rows[0] as { browser_hash: string; code_verifier: string; expires_at: Date | string } | undefined;
  return row
    ? { browserHash: row.browser_hash, codeVerifier: row.code_verifier, expiresAt: new Date(row.expires_at) }
    : null;
}

/** Deletes the expired states by the database's clock (the purge job); how many. */
export async function purgeExpiredStates(em: EntityManager): Promise<number> {
  const rows = await em.execute<{ n: number }[]>(
    'with d as (delete from oauth_states where expires_at < now() returning 1) select count(*)::int as n from d',
  );
  return rows[0]?.n ?? 0;
}
