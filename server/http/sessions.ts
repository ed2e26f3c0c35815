/**
 * Sessions: koa-session with a PostgreSQL store (its rows: domain/auth/session-rows.ts). The
 * cookie carries only a random key (signed with SESSION_SECRET by Keygrip, as Koa does, newest
 * key first for rotation); the table stores its sha256, so a database leak yields no usable cookie. A session lives 2
 * days without use (renewed once past half of that) and at most 30 days after sign-in.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import Keygrip from 'keygrip';
import session from 'koa-session';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../infra/config.ts';
import type { SessionUser } from '../domain/auth/session-user.ts';
import { sha256hex } from '../domain/hash.ts';
import { oneInFlightLoader } from '../infra/batch-loader.ts';
import type { RunPrepared } from '../domain/prepared-sql.ts';
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS, sessionRows } from '../domain/auth/session-rows.ts';

export const SESSION_COOKIE = 'mia_session';
/**
 * Over https the cookie carries the `__Host-` prefix: browsers then accept it only when
 * Secure, for Path=/ and with no Domain, so a sibling subdomain cannot plant or shadow it.
 */
export const sessionCookieName = (secure: boolean) => (secure ? `__Host-${SESSION_COOKIE}` : SESSION_COOKIE);
export { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS };

interface SessionData {
  accountId?: string;
  email?: string;
  csrfToken?: string;
  signedInAt?: number;
}

const sameString = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** Signed cookies remembered as verified (each entry ~0.1 kB). */
const VERIFIED_COOKIES_MAX = 10_000;

/**
 * Koa's cookie signer, Keygrip (HMAC-SHA1, base64url, newest key first): it signs, and checks
 * every signature not remembered. A cookie it found signed with the newest key is remembered
 * (bounded, oldest forgotten first), so the later requests of a session only compare their
 * signature with the remembered one, in constant time: Keygrip's check is three HMACs, two of
 * them keyed by a Buffer, which Node 24 validates slowly, and on every request it was a share
 * of the server's CPU the bench sees (bench/results/HISTORY.md). Only what Keygrip accepted is
 * remembered, so forged cookies cannot fill the memory; a cookie signed with an older key is
 * not, so the cookies library keeps re-signing it with the newest one.
 */
export function cookieKeys(keys: readonly string[]): Keygrip {
  const keygrip = new Keygrip(keys);
  const verified = new Map<string, string>();
  const index = (data: string, digest: string): number => {
    const known = verified.get(data);
    if (known !== undefined && sameString(known, digest)) return 0;
    const at = keygrip.index(data, digest);
    if (at === 0) {
      if (verified.size >= VERIFIED_COOKIES_MAX) verified.delete(verified.keys().next().value!);
      verified.set(data, digest);
    }
    return at;
  };
  return {
    sign: (data: string) => keygrip.sign(data),
    index: (data: string, digest: string) => index(String(data), String(digest)),
    verify: (data: string, digest: string) => index(String(data), String(digest)) > -1,
  };
}

/** What koa-session hands the store besides the key: the request it serves. */
interface StoreCall {
  ctx?: object;
}

/**
 * The store koa-session calls. Reads of concurrent requests, of any sessions, are answered
 * together by one statement (oneInFlightLoader): a request arriving while a read is in
 * flight waits for the next one, so every request is answered by a statement that started
 * after it, and a change to a row (sign-out, expiry, deletion with the account, here or on
 * another instance) is seen by every request that starts after it.
 *
 * A save of the key the request read (a renewal, a changed CSRF token) only updates a live
 * row: a session signed out, revoked or expired while the request ran stays gone. Only a key
 * the request did not read (a new one from sign-in's regenerate) is inserted.
 */
export function createSessionStore(orm: MikroORM, run: RunPrepared) {
  const rows = sessionRows(orm, run);
  const reads = oneInFlightLoader<string, string | null>(async (ids) => {
    const byId = await rows.read([...new Set(ids)]);
    return ids.map((id) => byId.get(id) ?? null);
  });
  /** The key each request read a session under. */
  const readBy = new WeakMap<object, string>();
  return {
    async get(key: string, _maxAge?: unknown, call?: StoreCall) {
      // The row's JSON as text: each request parses its own copy.
      const text = await reads.load(sha256hex(key));
      if (text !== null && call?.ctx) readBy.set(call.ctx, key);
      return text === null ? null : (JSON.parse(text) as Record<string, unknown>);
    },
    /**
     * Saves a session unless its account ended every session after it signed in (disconnect
     * sets accounts.sessions_revoked_at) or is gone (deletion): a request still in flight
     * on another device when that happened would otherwise write its row back.
     */
    async set(key: string, data: Record<string, unknown>, maxAge: number | 'session' | undefined, call?: StoreCall) {
      const ttl = String(typeof maxAge === 'number' ? maxAge : SESSION_IDLE_MS);
      const accountId = typeof data.accountId === 'string' ? data.accountId : null;
      const signedInAt = typeof data.signedInAt === 'number' ? new Date(data.signedInAt) : new Date(0);
      const row = { id: sha256hex(key), accountId, data: JSON.stringify(data), ttlMs: ttl, signedInAt };
      // The key this request read: a renewal, never a row written back; else a new key (sign-in's regenerate).
      await (call?.ctx && readBy.get(call.ctx) === key ? rows.renew(row) : rows.insert(row));
    },
    async destroy(key: string) {
      await rows.destroy(sha256hex(key));
    },
  };
}

export interface Sessions {
  /** Installs koa-session on the app (cookie keys included) and returns its middleware. */
  install(app: Koa): Koa.Middleware;
  currentUser(ctx: Koa.Context): Promise<SessionUser | null>;
  csrfValid(ctx: Koa.Context): boolean;
  /** The CSRF token of the current session, or a fresh unbound one when signed out. */
  csrfToken(ctx: Koa.Context): string;
  /** Starts an authenticated session under a new key (no fixation). */
  signIn(ctx: Koa.Context, user: SessionUser): Promise<void>;
  signOut(ctx: Koa.Context): void;
}

export function createSessions(orm: MikroORM, run: RunPrepared, config: Readonly<Config>): Sessions {
  const options = {
    key: sessionCookieName(config.secureCookies),
    maxAge: SESSION_IDLE_MS,
    renew: true,
    httpOnly: true,
    sameSite: 'lax',
    signed: true,
    secure: config.secureCookies,
    store: createSessionStore(orm, run),
    genid: () => randomBytes(32).toString('base64url'),
  } as const;
  const data = (ctx: Koa.Context) => (ctx.session ?? {}) as SessionData;

  return {
    install(app) {
      app.keys = config.sessionKeys?.length ? cookieKeys(config.sessionKeys) : [];
      const mw = session({ ...options }, app);
      return async (ctx, next) => {
        // Behind TLS the service itself speaks plain HTTP: allow Secure cookies regardless.
        if (config.secureCookies) (ctx.cookies as unknown as { secure: boolean }).secure = true;
        return mw(ctx, next);
      };
    },
    async currentUser(ctx) {
      const s = data(ctx);
      if (!s.accountId || !s.email) return null;
      if (!s.signedInAt || Date.now() - s.signedInAt > SESSION_ABSOLUTE_MS) {
        ctx.session = null;
        return null;
      }
      return { accountId: s.accountId, email: s.email };
    },
    csrfValid(ctx) {
      const expected = data(ctx).csrfToken;
      const given = ctx.get('X-CSRF-Token');
      if (!expected || !given || ctx.get('Origin') !== config.webOrigin) return false;
      const a = Buffer.from(expected);
      const b = Buffer.from(given);
      return a.length === b.length && timingSafeEqual(a, b);
    },
    csrfToken(ctx) {
      return data(ctx).csrfToken ?? randomBytes(24).toString('base64url');
    },
    async signIn(ctx, user) {
      await ctx.session!.regenerate();
      Object.assign(ctx.session!, {
        accountId: user.accountId,
        email: user.email,
        csrfToken: randomBytes(24).toString('base64url'),
        signedInAt: Date.now(),
      } satisfies SessionData);
    },
    signOut(ctx) {
      ctx.session = null;
    },
  };
}
