import { timingSafeEqual, createHash } from 'node:crypto';
import { z } from 'zod';
import { createIncidentInput, incident, incidentList, updateIncidentInput } from '../../../shared/schemas/status.ts';
import { AppError } from '../../domain/errors.ts';
import { publicProcedure, router, wrap } from '../init.ts';

const digest = (v: string) => createHash('sha256').update(v).digest();

/** Status-admin credential: `Authorization: Bearer <STATUS_ADMIN_TOKEN>`, compared in constant time. */
const adminProcedure = publicProcedure.use(({ ctx, next }) => {
  const expected = ctx.container.config.statusAdminToken;
  const header = ctx.koa.get('Authorization');
  const given = header.startsWith('Bearer ') ? header.slice(7) : '';
  if (!expected || !given || !timingSafeEqual(digest(expected), digest(given))) throw wrap(new AppError('FORBIDDEN'));
  return next();
});

export const statusRouter = router({
  incidents: publicProcedure
    .meta({ openapi: { method: 'GET', path: '/api/status/incidents', tags: ['status'], summary: 'Incident and maintenance feed' } })
    .input(z.object({}).strict().optional())
    .output(incidentList)
    .query(async ({ ctx }) => ({ incidents: await ctx.container.incidents.list(ctx.em) })),

  createIncident: adminProcedure
    .meta({ openapi: { method: 'POST', path: '/api/status/incidents', tags: ['status'], summary: 'Create an incident (status admin)', protect: true, successDescription: 'Created' } })
    .input(createIncidentInput)
    .output(incident)
    .mutation(async ({ ctx, input }) => {
      const created = await ctx.container.incidents.create(ctx.em, input);
      ctx.koa.state.status = 201;
      return created;
    }),

  updateIncident: adminProcedure
    .meta({ openapi: { method: 'PATCH', path: '/api/status/incidents/{id}', tags: ['status'], summary: 'Update an incident (status admin)', protect: true } })
    .input(updateIncidentInput)
    .output(incident)
    .mutation(({ ctx, input }) => ctx.container.incidents.update(ctx.em, input)),
});
