import { z } from 'zod';
import { deleteAccountInput, sessionInfo } from '../../../shared/schemas/auth.ts';
import { sessionStreamKey } from '../../domain/events/events.service.ts';
import { csrfProcedure, publicProcedure, router } from '../init.ts';

export const authRouter = router({
  session: publicProcedure
    .meta({
      openapi: { method: 'GET', path: '/auth/session', tags: ['auth'], summary: 'Session status and CSRF token' },
      errors: ['VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(z.object({}).strict().optional())
    .output(sessionInfo)
    .query(async ({ ctx }) => {
      const user = await ctx.session.currentUser();
      const csrfToken = ctx.session.csrfToken();
      return user ? { authenticated: true, csrfToken, email: user.email } : { authenticated: false, csrfToken };
    }),

  logout: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/logout',
        tags: ['auth'],
        summary: 'End the session',
        successDescription: 'No Content',
      },
      successStatus: 204,
      errors: ['VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(z.object({}).strict().optional())
    .output(z.void())
    .mutation(async ({ ctx }) => {
      const streams = sessionStreamKey(ctx.session.csrfToken());
      ctx.session.signOut();
      // The session's event streams end too, on every instance (best effort: the logout stands).
      await ctx.services.events.endSession(streams).catch(() => undefined);
    }),

  disconnect: csrfProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/provider/disconnect',
        tags: ['auth'],
        summary: 'Revoke access, stop the watch, clear credentials, end sessions',
        successDescription: 'No Content',
      },
      rateLimit: 'auth.disconnect',
      successStatus: 204,
      errors: ['AUTH_REQUIRED', 'CSRF_FAILED', 'VALIDATION_FAILED', 'TOKEN_EXPIRED', 'SERVICE_UNAVAILABLE'],
    })
    .input(z.object({}).strict().optional())
    .output(z.void())
    .mutation(async ({ ctx }) => {
      await ctx.services.auth.disconnect(ctx.em, ctx.user.accountId);
      ctx.session.signOut();
      await ctx.services.events.endAccount(ctx.user.accountId);
    }),

  deleteAccount: csrfProcedure
    // REST: DELETE /auth/account is served by http/delete-account.route.ts through this procedure.
    .meta({
      rateLimit: 'auth.deleteAccount',
      successStatus: 204,
      errors: ['AUTH_REQUIRED', 'CSRF_FAILED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(deleteAccountInput)
    .output(z.void())
    .mutation(async ({ ctx }) => {
      await ctx.services.auth.deleteAccount(ctx.em, ctx.user.accountId);
      ctx.session.signOut();
      await ctx.services.events.endAccount(ctx.user.accountId);
    }),
});
