import { z } from 'zod';
import { inputTimestamp, text, timestamp, uuid } from './common.ts';

export const INCIDENT_STATES = {
  incident: ['investigating', 'identified', 'monitoring', 'resolved'],
  maintenance: ['scheduled', 'in_progress', 'completed'],
} as const;
export const incidentKind = z.enum(['incident', 'maintenance']);
export const incidentState = z.enum([...INCIDENT_STATES.incident, ...INCIDENT_STATES.maintenance]);
export const component = z.enum(['api', 'database', 'mail', 'ai']);
export const FINAL_STATES: readonly string[] = ['resolved', 'completed'];

export const incident = z.object({
  id: uuid,
  kind: incidentKind,
  state: incidentState,
  title: z.string(),
  message: z.string(),
  affectedComponents: z.array(component),
  startsAt: timestamp,
  resolvedAt: timestamp.optional(),
});
export type Incident = z.infer<typeof incident>;

export const incidentList = z.object({ incidents: z.array(incident) });

const title = text().trim().min(1).max(200);
const message = text().trim().min(1).max(5000);
const components = z
  .array(component)
  .max(4)
  .refine((a) => new Set(a).size === a.length, 'duplicate component');

export const createIncidentInput = z
  .object({
    kind: incidentKind,
    state: incidentState,
    title,
    message,
    affectedComponents: components,
    startsAt: inputTimestamp.optional(),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (!(INCIDENT_STATES[v.kind] as readonly string[]).includes(v.state)) {
      ctx.addIssue({
        code: 'custom',
        path: ['state'],
        message: 'state does not belong to kind',
        params: { code: 'invalid_state_for_kind' },
      });
    }
  });

export const updateIncidentInput = z
  .object({
    id: uuid,
    state: incidentState.optional(),
    title: title.optional(),
    message: message.optional(),
    affectedComponents: components.optional(),
  })
  .strict();
