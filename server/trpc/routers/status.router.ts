import { z } from 'zod';
import { createIncidentInput, incident, incidentList, updateIncidentInput } from '../../../shared/schemas/status.ts';
import { adminProcedure, publicProcedure, router } from '../init.ts';

export const statusRouter = router({
  incidents: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/status/incidents',
        tags: ['status'],
        summary: 'Incident and maintenance feed',
      },
      errors: ['VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(z.object({}).strict().optional())
    .output(incidentList)
    .query(async ({ ctx }) => ({ incidents: await ctx.services.incidents.list(ctx.em) })),

  createIncident: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/status/incidents',
        tags: ['status'],
        summary: 'Create an incident (status admin)',
        protect: true,
        successDescription: 'Created',
      },
      successStatus: 201,
      errors: ['FORBIDDEN', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(createIncidentInput)
    .output(incident)
    .mutation(({ ctx, input }) =>
      ctx.services.incidents.create(ctx.em, input, ctx.services.statusAdmin.actorOf(ctx.bearerToken)),
    ),

  updateIncident: adminProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/api/status/incidents/{id}',
        tags: ['status'],
        summary: 'Update an incident (status admin)',
        protect: true,
      },
      errors: ['FORBIDDEN', 'VALIDATION_FAILED', 'NOT_FOUND', 'SERVICE_UNAVAILABLE'],
    })
    .input(updateIncidentInput)
    .output(incident)
    .mutation(({ ctx, input }) =>
      ctx.services.incidents.update(ctx.em, input, ctx.services.statusAdmin.actorOf(ctx.bearerToken)),
    ),
});
