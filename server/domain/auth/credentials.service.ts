/**
 * Stored provider credentials: encrypted on write, decrypted only to build an authorised
 * client. Refreshed access tokens are stored back; a refresh answered `invalid_grant`
 * marks the account as needing reconnection and becomes TOKEN_EXPIRED.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { OAuth2Client } from 'google-auth-library';
import { Account, Credential } from '../../../db/entities/index.ts';
import { errorSummary, type Logger } from '../../logger.ts';
import { isInvalidGrant, type OAuthProvider, type ProviderTokens } from '../../providers/oauth.ts';
import { AppError } from '../errors.ts';
import type { TokenCrypto } from './token-crypto.ts';

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
}

export function createCredentialsService(deps: { orm: MikroORM; crypto: TokenCrypto; oauth: OAuthProvider; log: Logger }): CredentialsService {
  const { crypto, oauth, log } = deps;
  const service: CredentialsService = {
    async store(em, accountId, tokens) {
      const existing = await em.findOne(Credential, { account: accountId });
      const refreshTokenEnc = tokens.refreshToken ? crypto.encrypt(tokens.refreshToken) : existing?.refreshTokenEnc;
      if (!refreshTokenEnc) throw new Error('no refresh token to store');
      await em.upsert(Credential, {
        account: accountId,
        keyId: crypto.keyId,
        refreshTokenEnc,
        accessTokenEnc: crypto.encrypt(tokens.accessToken),
        accessTokenExpiresAt: tokens.expiresAt ?? null,
        scope: tokens.scope,
        updatedAt: new Date(),
      });
    },

    async refreshToken(em, accountId) {
      const cred = await em.findOne(Credential, { account: accountId });
      return cred ? crypto.decrypt(cred.refreshTokenEnc) : null;
    },

    async client(em, accountId) {
      const cred = await em.findOne(Credential, { account: accountId });
      if (!cred) throw new AppError('TOKEN_EXPIRED');
      const scope = cred.scope;
      return oauth.authorisedClient(
        {
          accessToken: cred.accessTokenEnc ? crypto.decrypt(cred.accessTokenEnc) : undefined,
          refreshToken: crypto.decrypt(cred.refreshTokenEnc),
          expiresAt: cred.accessTokenExpiresAt ?? undefined,
        },
        (t) => {
          if (!t.access_token) return;
          // A refreshed access token: store it for the next call (own EntityManager, not the caller's unit of work).
          const fork = deps.orm.em.fork();
          fork
            .nativeUpdate(Credential, { account: accountId }, {
              accessTokenEnc: crypto.encrypt(t.access_token),
              accessTokenExpiresAt: t.expiry_date ? new Date(t.expiry_date) : null,
              keyId: crypto.keyId,
              scope,
              updatedAt: new Date(),
            })
            .catch((err: unknown) => log.warn({ accountId, ...errorSummary(err) }, 'storing refreshed token failed'));
        },
      );
    },

    async rethrowIfRevoked(accountId, err) {
      if (!isInvalidGrant(err)) return;
      await deps.orm.em.fork().nativeUpdate(Account, { id: accountId }, { needsReconnect: true });
      log.info({ accountId }, 'provider grant revoked or expired; account needs reconnection');
      throw new AppError('TOKEN_EXPIRED', { cause: err });
    },

    async remove(em, accountId) {
      await em.nativeDelete(Credential, { account: accountId });
    },
  };
  return service;
}
