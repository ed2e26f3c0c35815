/** An incident or scheduled maintenance of the public status feed. */
import { defineEntity, p } from '@mikro-orm/core';

export const IncidentSchema = defineEntity({
  name: 'Incident',
  tableName: 'incidents',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    kind: p.string(),
    state: p.string(),
    title: p.text(),
    message: p.text(),
    affectedComponents: p.array().default([]),
    startsAt: p.datetime().index(),
    resolvedAt: p.datetime().nullable(),
    createdAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export class Incident extends IncidentSchema.class {}
IncidentSchema.setClass(Incident);
