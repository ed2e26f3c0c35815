/** A recognised product-analytics event, stored compactly (bigint id, name, JSON properties). */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const AnalyticsEventSchema = defineEntity({
  name: 'AnalyticsEvent',
  tableName: 'analytics_events',
  properties: {
    id: p.bigint('string').primary().autoincrement(),
    account: () => p.manyToOne(Account).mapToPk().nullable().deleteRule('cascade').index(),
    anonymousId: p.uuid().nullable(),
    name: p.string(),
    properties: p.json<Record<string, unknown>>().nullable(),
    // The purge job deletes by age (server/domain/auth/purge-expired.ts).
    createdAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date())
      .index(),
  },
});
export class AnalyticsEvent extends AnalyticsEventSchema.class {}
AnalyticsEventSchema.setClass(AnalyticsEvent);
