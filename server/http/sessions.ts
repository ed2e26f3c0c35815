/**
 * Sessions: koa-session with a PostgreSQL store. The cookie carries only a random key
 * (signed with SESSION_SECRET, newest key first for rotation); the table stores its
 * sha256, so a database leak yields no usable cookie. A session lives 2 days without use
 * (renewed once past half of that) and at most 30 days after sign-in.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import session from 'koa-session';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import type { SessionUser } from '../trpc/context.ts';

export const SESSION_COOKIE = 'mia_session';
export const SESSION_IDLE_MS = 2 * 24 * 3600 * 1000;
export const SESSION_ABSOLUTE_MS = 30 * 24 * 3600 * 1000;

interface SessionData {
  accountId?: string;
  email?: string;
  csrfToken?: string;
  signedInAt?: number;
}

export const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');

export function createSessionStore(orm: MikroORM) {
  const sql = (q: string, params: unknown[]) => orm.em.getConnection().execute(q, params);
  return {
    async get(key: string) {
      const rows = await sql('select data from sessions where id = ? and expires_at > now()', [sha256(key)]);
      return (rows[0]?.data as Record<string, unknown>) ?? null;
    },
    async set(key: string, data: Record<string, unknown>, maxAge: number | 'session' | undefined) {
      const ttl = typeof maxAge === 'number' ? maxAge : SESSION_IDLE_MS;
      const accountId = typeof data.accountId === 'string' ? data.accountId : null;
      await sql(
        `insert into sessions (id, account_id, data, expires_at) values (?, ?, ?, now() + (? || ' milliseconds')::interval)
         on conflict (id) do update set account_id = excluded.account_id, data = excluded.data, expires_at = excluded.expires_at`,
        [sha256(key), accountId, JSON.stringify(data), String(ttl)],
      );
    },
    async destroy(key: string) {
      await sql('delete from sessions where id = ?', [sha256(key)]);
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

export function createSessions(orm: MikroORM, config: Readonly<Config>): Sessions {
  const options = {
    key: SESSION_COOKIE,
    maxAge: SESSION_IDLE_MS,
    renew: true,
    httpOnly: true,
    sameSite: 'lax',
    signed: true,
    secure: config.secureCookies,
    store: createSessionStore(orm),
    genid: () => randomBytes(32).toString('base64url'),
  } as const;
  const data = (ctx: Koa.Context) => (ctx.session ?? {}) as SessionData;

  return {
    install(app) {
      app.keys = config.sessionKeys ?? [];
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
