/**
 * Product analytics: recognised events are validated against their fixed property schema
 * and stored; unknown names are accepted and dropped (older clients keep working).
 * Non-public events need a session; anonymousId is kept only when there is none.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AnalyticsEvent } from '../../../db/entities/index.ts';
import { ANALYTICS_EVENTS, type AnalyticsEventName } from '../../../shared/schemas/analytics.ts';
import { AppError, issuesFromZod } from '../errors.ts';

export function createAnalyticsService() {
  return {
    async record(
      em: EntityManager,
      input: { event: string; properties?: Record<string, unknown>; anonymousId?: string },
      accountId: string | null,
    ): Promise<{ ok: boolean; stored: boolean }> {
      if (!Object.hasOwn(ANALYTICS_EVENTS, input.event)) return { ok: true, stored: false };
      const def = ANALYTICS_EVENTS[input.event as AnalyticsEventName];
      if (!def.public && !accountId) throw new AppError('AUTH_REQUIRED');
      const parsed = def.properties.safeParse(input.properties ?? {});
      if (!parsed.success) {
        const issues = issuesFromZod(parsed.error.issues).map((i) => ({ ...i, path: i.path ? `properties.${i.path}` : 'properties' }));
        throw new AppError('VALIDATION_FAILED', { issues });
      }
      const properties = parsed.data as Record<string, unknown>;
      em.create(AnalyticsEvent, {
        name: input.event,
        account: accountId,
        anonymousId: accountId ? null : (input.anonymousId ?? null),
        properties: Object.keys(properties).length ? properties : null,
      });
      await em.flush();
      return { ok: true, stored: true };
    },
  };
}
export type AnalyticsService = ReturnType<typeof createAnalyticsService>;
