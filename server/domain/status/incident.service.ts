/**
 * The public incident and maintenance feed and its admin writes. States must belong to the
 * kind; entering a final state (resolved/completed) sets resolvedAt, leaving it clears it.
 * Every write leaves an audit line: who (the admin credential's fingerprint), which incident,
 * what changed (field names and the state, never the texts).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { Incident } from '../../../db/entities/index.ts';
import {
  FINAL_STATES,
  INCIDENT_STATES,
  type Incident as IncidentDto,
  type createIncidentInput,
  type updateIncidentInput,
} from '../../../shared/schemas/status.ts';
import type { Logger } from '../../infra/logger.ts';
import { AppError } from '../errors.ts';

export const FEED_SIZE = 100;

export function toIncidentDto(i: Incident): IncidentDto {
  return {
    id: i.id,
    kind: i.kind as IncidentDto['kind'],
    state: i.state as IncidentDto['state'],
    title: i.title,
    message: i.message,
    affectedComponents: i.affectedComponents as IncidentDto['affectedComponents'],
    startsAt: i.startsAt.toISOString(),
    ...(i.resolvedAt ? { resolvedAt: i.resolvedAt.toISOString() } : {}),
  };
}

export function createIncidentService(deps: { log?: Logger; clock?: () => Date } = {}) {
  const clock = deps.clock ?? (() => new Date());
  const audit = (fields: Record<string, unknown>, msg: string) => deps.log?.info({ audit: true, ...fields }, msg);
  return {
    async list(em: EntityManager): Promise<IncidentDto[]> {
      const rows = await em.find(Incident, {}, { orderBy: { startsAt: 'desc', id: 'desc' }, limit: FEED_SIZE });
      return rows.map(toIncidentDto);
    },

    async create(
      em: EntityManager,
      input: z.infer<typeof createIncidentInput>,
      actor = 'unknown',
    ): Promise<IncidentDto> {
      const now = clock();
      const incident = em.create(Incident, {
        kind: input.kind,
        state: input.state,
        title: input.title,
        message: input.message,
        affectedComponents: input.affectedComponents,
        startsAt: input.startsAt ? new Date(input.startsAt) : now,
        resolvedAt: FINAL_STATES.includes(input.state) ? now : null,
      });
      await em.flush();
      audit(
        { action: 'incident.create', actor, incidentId: incident.id, kind: incident.kind, state: incident.state },
        'incident created',
      );
      return toIncidentDto(incident);
    },

    async update(
      em: EntityManager,
      input: z.infer<typeof updateIncidentInput>,
      actor = 'unknown',
    ): Promise<IncidentDto> {
      const incident = await em.findOne(Incident, { id: input.id });
      if (!incident) throw new AppError('NOT_FOUND');
      if (input.state !== undefined) {
        const allowed = INCIDENT_STATES[incident.kind as keyof typeof INCIDENT_STATES] as readonly string[];
        if (!allowed.includes(input.state)) {
          throw new AppError('VALIDATION_FAILED', { issues: [{ path: 'state', code: 'invalid_state_for_kind' }] });
        }
        const wasFinal = FINAL_STATES.includes(incident.state);
        const isFinal = FINAL_STATES.includes(input.state);
        if (isFinal && !wasFinal) incident.resolvedAt = clock();
        if (!isFinal) incident.resolvedAt = null;
        incident.state = input.state;
      }
      if (input.title !== undefined) incident.title = input.title;
      if (input.message !== undefined) incident.message = input.message;
      if (input.affectedComponents !== undefined) incident.affectedComponents = input.affectedComponents;
      await em.flush();
      const changed = Object.keys(input).filter((k) => k !== 'id' && input[k as keyof typeof input] !== undefined);
      audit(
        { action: 'incident.update', actor, incidentId: incident.id, changed, state: incident.state },
        'incident updated',
      );
      return toIncidentDto(incident);
    },
  };
}
export type IncidentService = ReturnType<typeof createIncidentService>;
