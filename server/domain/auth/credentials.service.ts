/**
 * Stored provider credentials: encrypted on write (bound to the account and the field),
 * decrypted only to build an authorised client. Refreshed access tokens are stored back; a
 * refresh answered `invalid_grant` marks the account as needing reconnection and becomes
 * TOKEN_EXPIRED, as does a ciphertext no configured key opens (a removed key, or a value
 * moved from another row). Every write puts both tokens under the newest key, and a read
 * that finds one under an older key or format rewrites them (lazy rotation; `rotateAll`
 * does every row at once).
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { OAuth2Client } from 'google-auth-library';
import { Credential } from '../../../db/entities/index.ts';
import { markNeedsReconnect } from './account-rows.ts';
import { errorSummary, type Logger } from '../../infra/logger.ts';
import { isInvalidGrant, type OAuthProvider, type ProviderTokens } from '../../providers/oauth.ts';
import { AppError } from '../errors.ts';
import { announceSync } from '../events/announce.ts';
import type { TokenContext, TokenCrypto } from './token-crypto.ts';

const refreshOf = (accountId: string): TokenContext => ({ accountId, field: 'refresh' });
const accessOf = (accountId: string): TokenContext => ({ accountId, field: 'access' });

export interface CredentialsService {
  /** Writes (or replaces) the account's tokens; keeps the old refresh token when none is given. */
  store(em: EntityManager, accountId: string, tokens: ProviderTokens): Promise<void>;
  /** The account's refresh token, or null when none is stored. */
  refreshToken(em: EntityManager, accountId: string): Promise<string | null>;
  /** An authorised client for the mail API; TOKEN_EXPIRED when nothing usable is stored. */
  client(em: EntityManager, accountId: string): Promise<OAuth2Client>;
  /** Maps an invalid_grant failure to TOKEN_EXPIRED (marking the account); rethrows others. */
  rethrowIfRevoked(accountId: string, err: unknown): Promise<void>;
  remove(em: EntityManager, accountId: string): Promise<void>;
  /** Re-encrypts every stored token under the newest key; rows that cannot be read are counted, not changed. */
  rotateAll(em: EntityManager): Promise<{ rotated: number; current: number; unreadable: number }>;
}

export function createCredentialsService(deps: {
  orm: MikroORM;
  crypto: TokenCrypto;
  oauth: OAuthProvider;
  log: Logger;
}): CredentialsService {
  const { crypto, oauth, log } = deps;

  /** Both tokens of a row in plaintext; TOKEN_EXPIRED (account marked) when no key opens them. */
  async function open(cred: Credential): Promise<{ refresh: string; access?: string }> {
    const accountId = cred.account as unknown as string;
    try {
      return {
        refresh: crypto.decrypt(cred.refreshTokenEnc, refreshOf(accountId)),
        access: cred.accessTokenEnc ? crypto.decrypt(cred.accessTokenEnc, accessOf(accountId)) : undefined,
      };
    } catch (err) {
      log.warn({ accountId, ...errorSummary(err) }, 'stored tokens cannot be decrypted; the account must reconnect');
      await markNeedsReconnect(deps.orm.em.fork(), accountId);
      await announceSync(deps.orm.em.fork(), accountId).catch(() => undefined);
      throw new AppError('TOKEN_EXPIRED', { cause: err });
    }
  }

  /** Both tokens under the newest key; a stored refresh ciphertext that already is stays as it is. */
  const sealed = (accountId: string, refresh: string, access: string | null | undefined, storedRefresh?: string) => ({
    keyId: crypto.keyId,
    refreshTokenEnc:
      storedRefresh && !crypto.isStale(storedRefresh) ? storedRefresh : crypto.encrypt(refresh, refreshOf(accountId)),
    accessTokenEnc: access == null ? null : crypto.encrypt(access, accessOf(accountId)),
  });

  const stale = (cred: Credential) =>
    crypto.isStale(cred.refreshTokenEnc) || (!!cred.accessTokenEnc && crypto.isStale(cred.accessTokenEnc));

  const service: CredentialsService = {
    async store(em, accountId, tokens) {
      const existing = await em.findOne(Credential, { account: accountId });
      // A kept refresh token is re-encrypted with the new access token: the row's key id is true of both.
      const refresh = tokens.refreshToken ?? (existing ? (await open(existing)).refresh : undefined);
      if (!refresh) throw new Error('no refresh token to store');
      await em.upsert(Credential, {
        account: accountId,
        ...sealed(accountId, refresh, tokens.accessToken, tokens.refreshToken ? undefined : existing?.refreshTokenEnc),
        accessTokenExpiresAt: tokens.expiresAt ?? null,
        scope: tokens.scope,
        updatedAt: new Date(),
      });
    },

    async refreshToken(em, accountId) {
      const cred = await em.findOne(Credential, { account: accountId });
      return cred ? (await open(cred)).refresh : null;
    },

    async client(em, accountId) {
      const cred = await em.findOne(Credential, { account: accountId });
      if (!cred) throw new AppError('TOKEN_EXPIRED');
      const scope = cred.scope;
      const { refresh, access } = await open(cred);
      const write = (fields: Record<string, unknown>, what: string) =>
        deps.orm.em
          .fork()
          .nativeUpdate(Credential, { account: accountId }, { ...fields, updatedAt: new Date() })
          .catch((err: unknown) => log.warn({ accountId, ...errorSummary(err) }, `storing ${what} failed`));
      if (stale(cred)) void write(sealed(accountId, refresh, access), 're-encrypted tokens');
      return oauth.authorisedClient(
        { accessToken: access, refreshToken: refresh, expiresAt: cred.accessTokenExpiresAt ?? undefined },
        (t) => {
          if (!t.access_token) return;
          // A refreshed access token: store it for the next call (own EntityManager, not the caller's unit of work).
          void write(
            {
              ...sealed(accountId, refresh, t.access_token, cred.refreshTokenEnc),
              accessTokenExpiresAt: t.expiry_date ? new Date(t.expiry_date) : null,
              scope,
            },
            'refreshed token',
          );
        },
      );
    },

    async rethrowIfRevoked(accountId, err) {
      if (!isInvalidGrant(err)) return;
      await markNeedsReconnect(deps.orm.em.fork(), accountId);
      // Open event streams show the account as needs_reconnect (best effort: the answer stands).
      await announceSync(deps.orm.em.fork(), accountId).catch(() => undefined);
      log.info({ accountId }, 'provider grant revoked or expired; account needs reconnection');
      throw new AppError('TOKEN_EXPIRED', { cause: err });
    },

    async remove(em, accountId) {
      await em.nativeDelete(Credential, { account: accountId });
    },

    async rotateAll(em) {
      const counts = { rotated: 0, current: 0, unreadable: 0 };
      for (const cred of await em.find(Credential, {}, { orderBy: { account: 'asc' } })) {
        if (!stale(cred)) {
          counts.current++;
          continue;
        }
        const accountId = cred.account as unknown as string;
        try {
          const { refresh, access } = await open(cred);
          await em.nativeUpdate(
            Credential,
            { account: accountId },
            { ...sealed(accountId, refresh, access), updatedAt: new Date() },
          );
          counts.rotated++;
        } catch {
          counts.unreadable++;
        }
      }
      return counts;
    },
  };
  return service;
}
