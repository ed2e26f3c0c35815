import { z } from 'zod';
import { deleteAccountInput, sessionInfo } from '../../../shared/schemas/auth.ts';
import { csrfProcedure, publicProcedure, router } from '../init.ts';

export const authRouter = router({
  session: publicProcedure
    .meta({ openapi: { method: 'GET', path: '/auth/session', tags: ['auth'], summary: 'Session status and CSRF token' } })
    .input(z.object({}).strict().optional())
    .output(sessionInfo)
    .query(async ({ ctx }) => {
      const user = await ctx.container.sessions.currentUser(ctx.koa);
      const csrfToken = ctx.container.sessions.csrfToken(ctx.koa);
      return user ? { authenticated: true, csrfToken, email: user.email } : { authenticated: false, csrfToken };
    }),

  logout: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/logout', tags: ['auth'], summary: 'End the session', successDescription: 'No Content' } })
    .input(z.object({}).strict().optional())
    .output(z.void())
    .mutation(({ ctx }) => {
      ctx.container.sessions.signOut(ctx.koa);
      ctx.koa.state.status = 204;
    }),

  disconnect: csrfProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/provider/disconnect', tags: ['auth'], summary: 'Revoke access, stop the watch, clear credentials, end sessions', successDescription: 'No Content' }, rateLimit: 'auth.disconnect' })
    .input(z.object({}).strict().optional())
    .output(z.void())
    .mutation(async ({ ctx }) => {
      await ctx.container.auth.disconnect(ctx.em, ctx.user.accountId);
      ctx.container.sessions.signOut(ctx.koa);
      ctx.koa.state.status = 204;
    }),

  deleteAccount: csrfProcedure
    // REST: DELETE /auth/account is served by http/delete-account.route.ts through this procedure.
    .meta({ rateLimit: 'auth.deleteAccount' })
    .input(deleteAccountInput)
    .output(z.void())
    .mutation(async ({ ctx }) => {
      await ctx.container.auth.deleteAccount(ctx.em, ctx.user.accountId);
      ctx.container.sessions.signOut(ctx.koa);
      ctx.koa.state.status = 204;
    }),
});
