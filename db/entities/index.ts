export * from './account.entity.ts';
export * from './session.entity.ts';
export * from './oauth-state.entity.ts';
export * from './credential.entity.ts';
export * from './mail-thread.entity.ts';
export * from './mail-message.entity.ts';
export * from './mail-inbox-count.entity.ts';
export * from './sync-state.entity.ts';
export * from './mail-set-aside.entity.ts';
export * from './mail-listing.entity.ts';
export * from './analysis.entity.ts';
export * from './draft.entity.ts';
export * from './ai-usage.entity.ts';
export * from './analytics-event.entity.ts';
export * from './incident.entity.ts';
export * from './rate-limit.entity.ts';
export * from './event-stream-slot.entity.ts';

import { AccountSchema } from './account.entity.ts';
import { SessionSchema } from './session.entity.ts';
import { OAuthStateSchema } from './oauth-state.entity.ts';
import { CredentialSchema } from './credential.entity.ts';
import { MailThreadSchema } from './mail-thread.entity.ts';
import { MailMessageSchema } from './mail-message.entity.ts';
import { MailInboxCountSchema } from './mail-inbox-count.entity.ts';
import { SyncStateSchema } from './sync-state.entity.ts';
import { MailSetAsideSchema } from './mail-set-aside.entity.ts';
import { MailListingSchema } from './mail-listing.entity.ts';
import { AnalysisSchema } from './analysis.entity.ts';
import { DraftSchema } from './draft.entity.ts';
import { AiUsageSchema } from './ai-usage.entity.ts';
import { AnalyticsEventSchema } from './analytics-event.entity.ts';
import { IncidentSchema } from './incident.entity.ts';
import { RateLimitSchema } from './rate-limit.entity.ts';
import { EventStreamSlotSchema } from './event-stream-slot.entity.ts';

export const allEntities = [
  AccountSchema,
  SessionSchema,
  OAuthStateSchema,
  CredentialSchema,
  MailThreadSchema,
  MailMessageSchema,
  SyncStateSchema,
  AnalysisSchema,
  DraftSchema,
  AiUsageSchema,
  AnalyticsEventSchema,
  IncidentSchema,
  RateLimitSchema,
  MailInboxCountSchema,
  MailSetAsideSchema,
  MailListingSchema,
  EventStreamSlotSchema,
];
