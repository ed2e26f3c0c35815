/** The account settings: signature and response-style defaults (runtime contract part 5). */
import { z } from 'zod';
import { settings, settingsUpdate } from '../../../shared/schemas/settings.ts';
import { authedProcedure, csrfProcedure, router } from '../init.ts';

export const settingsRouter = router({
  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/settings',
        tags: ['settings'],
        summary: 'Signature and response-style defaults',
      },
      errors: ['AUTH_REQUIRED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(z.object({}).strict().optional())
    .output(settings)
    .query(({ ctx }) => ctx.services.settings.get(ctx.em, ctx.user.accountId)),

  update: csrfProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/api/settings',
        tags: ['settings'],
        summary: 'Change the signature or response-style defaults',
      },
      rateLimit: 'settings.update',
      errors: ['AUTH_REQUIRED', 'CSRF_FAILED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(settingsUpdate)
    .output(settings)
    .mutation(({ ctx, input }) => ctx.services.settings.update(ctx.em, ctx.user.accountId, input)),
});
