/**
 * The context every procedure sees, for REST, /trpc and in-process callers alike. It holds
 * no request: `createContextInner` takes the services, an EntityManager (or a way to fork
 * one when first used), the request id and, for an in-process caller, the user. A
 * transport adds its edge (http/request-context.ts): the session behind the cookie, the
 * client's rate limit and the bearer credential. Tests call procedures through
 * `createCaller(createContextInner(...))` without HTTP.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SessionUser } from '../domain/auth/session-user.ts';
import type { BucketName } from '../domain/rate-limit-buckets.ts';
import type { Logger } from '../infra/logger.ts';
import type { Services } from '../services.ts';

/** The session as procedures use it. In-process callers get a fixed one (see `fixedSession`). */
export interface SessionAccess {
  currentUser(): Promise<SessionUser | null>;
  /** The request proves it comes from the web app (CSRF token and Origin). */
  csrfValid(): boolean;
  /** The session's CSRF token, or a fresh unbound one when signed out. */
  csrfToken(): string;
  signOut(): void;
}

export interface Context {
  requestId: string;
  log: Logger;
  services: Services;
  readonly em: EntityManager;
  /** The signed-in user, once the authed procedures have checked it (or as the caller gave it). */
  user: SessionUser | null;
  session: SessionAccess;
  /** Counts the request against a rate-limit bucket; absent for in-process callers. */
  rateLimit?: (bucket: BucketName) => Promise<void>;
  /** The `Authorization: Bearer` credential the request carried, if any. */
  bearerToken?: string;
}

export interface ContextInnerOptions {
  services: Services;
  /** An EntityManager, or a function forking one (called at most once, on first use). */
  em: EntityManager | (() => EntityManager);
  requestId: string;
  log: Logger;
  user?: SessionUser | null;
  session?: SessionAccess;
  rateLimit?: (bucket: BucketName) => Promise<void>;
  bearerToken?: string;
}

/** An in-process caller's session: the given user, trusted (no cookie, so no cross-site request). */
export function fixedSession(user: SessionUser | null): SessionAccess {
  return { currentUser: async () => user, csrfValid: () => true, csrfToken: () => '', signOut: () => {} };
}

export function createContextInner(opts: ContextInnerOptions): Context {
  const { em: given } = opts;
  let em = typeof given === 'function' ? undefined : given;
  return {
    requestId: opts.requestId,
    log: opts.log,
    services: opts.services,
    // Forked on first use: a procedure that only runs plain SQL (the thread list) needs none.
    get em() {
      return (em ??= (given as () => EntityManager)());
    },
    user: opts.user ?? null,
    session: opts.session ?? fixedSession(opts.user ?? null),
    rateLimit: opts.rateLimit,
    bearerToken: opts.bearerToken,
  };
}
