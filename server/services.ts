/**
 * The domain services a procedure can call: what the tRPC context carries (no ORM, pool,
 * config or HTTP in it). Built once by the container (container.ts).
 */
import type { AiFeature } from './domain/ai/index.ts';
import type { AnalyticsService } from './domain/analytics/analytics.service.ts';
import type { AuthService } from './domain/auth/auth.service.ts';
import type { HealthService } from './domain/health/health.service.ts';
import type { SyncService } from './domain/mail/sync/sync.service.ts';
import type { ThreadReads } from './domain/mail/threads/thread.service.ts';
import type { MailEventsService } from './domain/events/events.service.ts';
import type { SettingsService } from './domain/settings/settings.service.ts';
import type { IncidentService } from './domain/status/incident.service.ts';
import type { StatusAdmin } from './domain/status/status-admin.ts';

export interface Services {
  auth: AuthService;
  /** One bounded sync of an account (the route and the live inbox share it). */
  sync: SyncService;
  threads: ThreadReads;
  /** Live events of an account (GET /api/mail/events, `mail.events`). */
  events: MailEventsService;
  ai: AiFeature;
  settings: SettingsService;
  analytics: AnalyticsService;
  incidents: IncidentService;
  statusAdmin: StatusAdmin;
  health: HealthService;
}
