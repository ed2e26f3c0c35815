/**
 * The `accounts` table's lifecycle writes, in one place: the row a sign-in makes or renews,
 * the reconnect flag a dead grant sets, the moment disconnect ended every session, and the
 * deletion (every table references accounts with ON DELETE CASCADE). The settings columns
 * (signature, response style, analysis on arrival) are the settings service's own
 * (domain/settings/settings.service.ts), written through the entity under a row lock. The reads of
 * an account's identity and grant state (`findAccount`, `countAccounts`) are the tests' way in.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { Account } from '../../../db/entities/index.ts';

/** The account of a sign-in, made or renewed by the provider's subject; its settings and id are kept. */
export async function upsertSignedIn(
  em: EntityManager,
  identity: { sub: string; email: string },
  now: Date,
): Promise<string> {
  const account = await em.upsert(
    Account,
    { sub: identity.sub, email: identity.email, needsReconnect: false, updatedAt: now },
    { onConflictFields: ['sub'], onConflictExcludeFields: ['id', 'createdAt', 'signature', 'responseStyle'] },
  );
  return account.id;
}

/** The grant is dead (revoked, expired, undecryptable): the user must reconnect. */
export async function markNeedsReconnect(em: EntityManager, accountId: string): Promise<void> {
  await em.nativeUpdate(Account, { id: accountId }, { needsReconnect: true });
}

/** Sessions signed in before `at` may never be saved again (disconnect; the account row first in its transaction). */
export async function revokeSessions(em: EntityManager, accountId: string, at: Date): Promise<void> {
  await em.nativeUpdate(Account, { id: accountId }, { sessionsRevokedAt: at });
}

/** Deletes the account and, by cascade, every row that belongs to it: one statement, one transaction. */
export async function deleteAccountRow(em: EntityManager, accountId: string): Promise<void> {
  await em.transactional((tx) => tx.nativeDelete(Account, { id: accountId }));
}

/** An account's identity and whether its grant must be renewed. */
export interface AccountIdentity {
  id: string;
  sub: string;
  email: string;
  needsReconnect: boolean;
}

/** The account with this id, provider subject or email (as signed in); null when there is none. */
export async function findAccount(
  em: EntityManager,
  by: { id: string } | { sub: string } | { email: string },
): Promise<AccountIdentity | null> {
  const a = await em.findOne(Account, by, { disableIdentityMap: true });
  return a && { id: a.id, sub: a.sub, email: a.email, needsReconnect: a.needsReconnect };
}

/** How many accounts there are. */
export async function countAccounts(em: EntityManager): Promise<number> {
  return em.count(Account);
}
