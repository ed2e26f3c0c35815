/**
 * The browser legs of sign-in: GET /auth/provider (302 to the consent screen, with a
 * pre-auth cookie binding the state to this browser) and GET /auth/provider/callback
 * (302 to the web app with connected=1, or error=oauth_failed on any failure).
 */
import type Koa from 'koa';
import type { RouteInstaller } from './route-installer.ts';
import { AppError } from '../domain/errors.ts';
import { SignInFailure, type AuthService } from '../domain/auth/auth.service.ts';
import type { Config } from '../infra/config.ts';
import type { Sessions } from './sessions.ts';
import { errorSummary } from '../infra/logger.ts';

export const PREAUTH_COOKIE = 'mia_oauth';

const single = (v: unknown) => (typeof v === 'string' ? v : undefined);

export function oauthRoutes(deps: {
  config: Readonly<Config>;
  auth: AuthService;
  sessions: Sessions;
  orm: { em: { fork(): any } };
}): RouteInstaller {
  const { config } = deps;
  // Path-scoped (to the sign-in routes), so `__Secure-` rather than `__Host-` over https.
  const preauthCookie = config.secureCookies ? `__Secure-${PREAUTH_COOKIE}` : PREAUTH_COOKIE;
  const cookieOpts = {
    httpOnly: true,
    sameSite: 'lax' as const,
    signed: true,
    secure: config.secureCookies,
    path: '/auth/provider',
    maxAge: config.oauth.stateTtlSeconds * 1000,
  };
  const webAppUrl = (param: 'connected' | 'error', value: string) => {
    const url = new URL('/', config.webOrigin);
    url.searchParams.set(param, value);
    return url.toString();
  };
  const requireConfigured = () => {
    if (!config.oauth.configured) throw new AppError('SERVICE_UNAVAILABLE', { retryAfter: 60 });
  };

  return (routes, { limit }) => {
    routes.get('/auth/provider', limit('auth.provider'), async (ctx: Koa.Context) => {
      requireConfigured();
      const { redirectUrl, browserNonce } = await deps.auth.startSignIn(deps.orm.em.fork());
      ctx.cookies.set(preauthCookie, browserNonce, cookieOpts);
      ctx.set('Cache-Control', 'no-store');
      ctx.redirect(redirectUrl);
    });

    routes.get('/auth/provider/callback', limit('auth.callback'), async (ctx: Koa.Context) => {
      requireConfigured();
      ctx.set('Cache-Control', 'no-store');
      const browserNonce = ctx.cookies.get(preauthCookie, { signed: true });
      ctx.cookies.set(preauthCookie, '', { ...cookieOpts, maxAge: 0, expires: new Date(0) });
      try {
        const user = await deps.auth.completeSignIn(deps.orm.em.fork(), {
          state: single(ctx.query.state),
          code: single(ctx.query.code),
          error: single(ctx.query.error),
          browserNonce,
        });
        await deps.sessions.signIn(ctx, user);
        ctx.state.log.info({ accountId: user.accountId }, 'signed in');
        ctx.redirect(webAppUrl('connected', '1'));
      } catch (err) {
        const reason = err instanceof SignInFailure ? err.reason : 'unexpected error';
        ctx.state.log.warn(
          { reason, ...errorSummary(err instanceof SignInFailure ? err.cause : err) },
          'oauth callback failed',
        );
        ctx.redirect(webAppUrl('error', 'oauth_failed'));
      }
    });
  };
}
