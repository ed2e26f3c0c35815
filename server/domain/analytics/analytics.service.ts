/**
 * Product analytics: recognised events are validated against their fixed property schema
 * and stored; unknown names are accepted and dropped (older clients keep working).
 * Non-public events need a session; anonymousId is kept only when there is none. Events
 * without a session go through the deployment's budget per minute (anonymous-events.ts):
 * past it they are accepted and dropped too. A page_view keeps its path without query and
 * fragment and its referrer's origin only (page-view.ts).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AnalyticsEvent } from '../../../db/entities/index.ts';
import { ANALYTICS_EVENTS, type AnalyticsEventName } from '../../../shared/schemas/analytics.ts';
import { AppError, issuesFromZod } from '../errors.ts';
import type { RunPrepared } from '../prepared-sql.ts';
import { createAnonymousEvents } from './anonymous-events.ts';
import { storedPageView } from './page-view.ts';

/** Why an accepted event was not stored (the `reason` of mia_analytics_dropped_total). */
export type DropReason = 'budget' | 'unknown_name';

export interface AnalyticsOptions {
  prepared: RunPrepared;
  /** Anonymous events stored per minute by the whole deployment (ANALYTICS_ANONYMOUS_PER_MINUTE). */
  anonymousPerMinute: number;
  /** The clock of the budget's minute (tests). */
  now?: () => Date;
  onDrop?: (reason: DropReason) => void;
}

export function createAnalyticsService(opts: AnalyticsOptions) {
  const anonymous = createAnonymousEvents({
    prepared: opts.prepared,
    perMinute: opts.anonymousPerMinute,
    now: opts.now,
    onDrop: () => opts.onDrop?.('budget'),
  });
  return {
    async record(
      em: EntityManager,
      input: { event: string; properties?: Record<string, unknown>; anonymousId?: string },
      accountId: string | null,
    ): Promise<{ ok: boolean; stored: boolean }> {
      if (!Object.hasOwn(ANALYTICS_EVENTS, input.event)) {
        opts.onDrop?.('unknown_name');
        return { ok: true, stored: false };
      }
      const def = ANALYTICS_EVENTS[input.event as AnalyticsEventName];
      if (!def.public && !accountId) throw new AppError('AUTH_REQUIRED');
      const parsed = def.properties.safeParse(input.properties ?? {});
      if (!parsed.success) {
        const issues = issuesFromZod(parsed.error.issues).map((i) => ({
          ...i,
          path: i.path ? `properties.${i.path}` : 'properties',
        }));
        throw new AppError('VALIDATION_FAILED', { issues });
      }
      const data = parsed.data as Record<string, unknown>;
      const kept = input.event === 'page_view' ? storedPageView(data as { path: string; referrer?: string }) : data;
      const properties = Object.keys(kept).length ? kept : null;
      if (!accountId) {
        const stored = await anonymous.record({
          name: input.event,
          anonymousId: input.anonymousId ?? null,
          properties,
        });
        return { ok: true, stored };
      }
      em.create(AnalyticsEvent, { name: input.event, account: accountId, anonymousId: null, properties });
      await em.flush();
      return { ok: true, stored: true };
    },
  };
}
export type AnalyticsService = ReturnType<typeof createAnalyticsService>;
