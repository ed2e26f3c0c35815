import { z } from 'zod';
import { sessionInfo } from '../../../shared/schemas/auth.ts';
import { publicProcedure, router } from '../init.ts';

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
});
