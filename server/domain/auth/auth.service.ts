/**
 * Sign-in (authorization code + PKCE), disconnect and account deletion. OAuth state is
 * stored hashed, bound to the browser's pre-auth cookie, single use (deleted on first
 * presentation, whatever the outcome) and short-lived (oauth-states.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { deleteAccountRow, revokeSessions, upsertSignedIn } from './account-rows.ts';
import { endAccountSessions } from './session-rows.ts';
import { putState, takeState } from './oauth-states.ts';
import { clearWatch, createSyncState } from '../mail/sync/states/index.ts';
import { errorSummary, type Logger } from '../../infra/logger.ts';
import { MAIL_SCOPE, type OAuthProvider } from '../../providers/oauth.ts';
import type { CredentialsService } from './credentials.service.ts';
import { sha256hex } from '../hash.ts';

const random = () => randomBytes(32).toString('base64url');

/** Why a callback failed; logged with the request id, never shown to the browser. */
export class SignInFailure extends Error {
  readonly reason: string;
  constructor(reason: string, cause?: unknown) {
    super(`sign-in failed: ${reason}`, { cause });
    this.name = 'SignInFailure';
    this.reason = reason;
  }
}

/** The mail watch as the auth flow needs it (registered after sign-in, stopped before revoking). */
export interface MailWatchControl {
  register(accountId: string): Promise<void>;
  stop(em: EntityManager, accountId: string): Promise<void>;
}

export function createAuthService(deps: {
  oauth: OAuthProvider;
  credentials: CredentialsService;
  log: Logger;
  stateTtlSeconds: number;
  watch: MailWatchControl;
  /** Queues the account's first sync (the background backfill); a failure is logged, never fails the sign-in. */
  startSync?: (accountId: string) => Promise<unknown>;
  clock?: () => Date;
}) {
  const clock = deps.clock ?? (() => new Date());
  const { oauth, credentials, log } = deps;

  /** Best effort: stop the watch, then revoke the grant. Failures are logged, never block removal. */
  async function releaseProviderAccess(em: EntityManager, accountId: string) {
    try {
      await deps.watch.stop(em, accountId);
    } catch (err) {
      log.warn({ accountId, ...errorSummary(err) }, 'stopping the mail watch failed');
    }
    const refreshToken = await credentials.refreshToken(em, accountId).catch(() => null);
    if (!refreshToken) return;
    try {
      await oauth.revoke(refreshToken);
    } catch (err) {
      log.warn({ accountId, ...errorSummary(err) }, 'revoking at the provider failed; credentials are deleted anyway');
    }
  }

  return {
    async startSignIn(em: EntityManager): Promise<{ redirectUrl: string; browserNonce: string }> {
      const state = random();
      const codeVerifier = random();
      const browserNonce = random();
      const codeChallenge = createHash('sha256').update(codeVerifier).digest('base64url');
      const now = clock();
      await putState(em, {
        state,
        browserNonce,
        codeVerifier,
        expiresAt: new Date(now.getTime() + deps.stateTtlSeconds * 1000),
        now,
      });
      return { redirectUrl: oauth.authorizationUrl({ state, codeChallenge }), browserNonce };
    },

    async completeSignIn(
      em: EntityManager,
      q: { state?: string; code?: string; error?: string; browserNonce?: string },
    ): Promise<{ accountId: string; email: string }> {
      if (!q.state) throw new SignInFailure('missing state');
      // Single use: the state is gone after this, whatever happens next.
      const row = await takeState(em, q.state);
      if (!row) throw new SignInFailure('unknown or reused state');
      if (row.expiresAt.getTime() <= clock().getTime()) throw new SignInFailure('expired state');
      if (!q.browserNonce || sha256hex(q.browserNonce) !== row.browserHash)
        throw new SignInFailure('state presented by another browser');
      if (q.error) throw new SignInFailure('provider returned an error');
      if (!q.code) throw new SignInFailure('missing code');

      let tokens;
      try {
        tokens = await oauth.exchangeCode({ code: q.code, codeVerifier: row.codeVerifier });
      } catch (err) {
        throw new SignInFailure('code exchange failed', err);
      }
      // Tokens of a failed callback are not revoked: revoking revokes the user's whole grant
      // to this client, which would also cut off an existing connection of the same user.
      if (!tokens.scope.split(/\s+/).includes(MAIL_SCOPE)) throw new SignInFailure('mail scope not granted');
      let identity;
      try {
        identity = await oauth.userinfo(tokens.accessToken);
      } catch (err) {
        throw new SignInFailure('userinfo failed', err);
      }

      const accountId = await em.transactional(async (tx) => {
        const id = await upsertSignedIn(tx, identity, clock());
        if (!tokens.refreshToken && !(await credentials.refreshToken(tx, id)))
          throw new SignInFailure('no refresh token granted');
        await credentials.store(tx, id, tokens);
        await createSyncState(tx, id);
        return id;
      });
      // Awaited (a failure is logged, never fails the sign-in): the inbox is watched once the user lands.
      await deps.watch
        .register(accountId)
        .catch((err: unknown) => log.warn({ accountId, ...errorSummary(err) }, 'registering the mail watch failed'));
      // The inbox backfills in the background from here on: the list fills while the user watches.
      await deps
        .startSync?.(accountId)
        .catch((err: unknown) =>
          log.warn({ accountId, ...errorSummary(err) }, 'queueing the first sync failed; the quiet sweep will'),
        );
      return { accountId, email: identity.email };
    },

    /** Revokes, stops the watch, deletes the credentials and every session of the account. */
    async disconnect(em: EntityManager, accountId: string): Promise<void> {
      try {
        await releaseProviderAccess(em, accountId);
      } finally {
        await em.transactional(async (tx) => {
          // The account row first (the one lock order of the account's writers, see lockAccount).
          // Sessions signed in before now may never be saved again (a request in flight elsewhere).
          await revokeSessions(tx, accountId, clock());
          await credentials.remove(tx, accountId);
          await endAccountSessions(tx, accountId);
          await clearWatch(tx, accountId);
        });
      }
    },

    /** Revokes, stops the watch and deletes the account with every row that belongs to it. */
    async deleteAccount(em: EntityManager, accountId: string): Promise<void> {
      try {
        await releaseProviderAccess(em, accountId);
      } finally {
        await deleteAccountRow(em, accountId);
      }
    },
  };
}
export type AuthService = ReturnType<typeof createAuthService>;
