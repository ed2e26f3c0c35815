/** The account settings: signature and response-style defaults (runtime contract part 5). */
import { z } from 'zod';
import { settings, settingsUpdate } from '../../../shared/schemas/settings.ts';
import { authedProcedure, csrfProcedure, router } from '../init.ts';
import { objectBody } from './ai.router.ts';

export const settingsRouter = router({
  get: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/settings', tags: ['settings'], summary: 'Signature and response-style defaults' } })
    .input(z.object({}).strict().optional())
    .output(settings)
    .query(({ ctx }) => ctx.container.settings.get(ctx.em, ctx.user.accountId)),

  update: csrfProcedure
    .use(objectBody)
    .meta({ openapi: { method: 'PATCH', path: '/api/settings', tags: ['settings'], summary: 'Change the signature or response-style defaults' }, rateLimit: 'settings.update' })
    .input(settingsUpdate)
    .output(settings)
    .mutation(({ ctx, input }) => ctx.container.settings.update(ctx.em, ctx.user.accountId, input)),
});
