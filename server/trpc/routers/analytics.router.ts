import { analyticsEventInput, analyticsResult } from '../../../shared/schemas/analytics.ts';
import { publicProcedure, router } from '../init.ts';

export const analyticsRouter = router({
  event: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/analytics/event',
        tags: ['analytics'],
        summary: 'Record a product-analytics event',
      },
      rateLimit: 'analytics.event',
      errors: ['VALIDATION_FAILED', 'AUTH_REQUIRED', 'SERVICE_UNAVAILABLE'],
    })
    .input(analyticsEventInput)
    .output(analyticsResult)
    .mutation(async ({ ctx, input }) => {
      const user = await ctx.session.currentUser();
      const { ok } = await ctx.services.analytics.record(ctx.em, input, user?.accountId ?? null);
      return { ok };
    }),
});
