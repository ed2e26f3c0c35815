import { analyticsEventInput, analyticsResult } from '../../../shared/schemas/analytics.ts';
import { publicProcedure, router } from '../init.ts';

export const analyticsRouter = router({
  event: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/api/analytics/event', tags: ['analytics'], summary: 'Record a product-analytics event' }, rateLimit: 'analytics.event' })
    .input(analyticsEventInput)
    .output(analyticsResult)
    .mutation(async ({ ctx, input }) => {
      const user = await ctx.container.sessions.currentUser(ctx.koa);
      const { ok } = await ctx.container.analytics.record(ctx.em, input, user?.accountId ?? null);
      return { ok };
    }),
});
