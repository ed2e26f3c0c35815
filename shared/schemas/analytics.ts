import { z } from 'zod';
import { length, tone } from './ai.ts';
import { text, uuid } from './common.ts';

const threadRef = z.object({ threadId: uuid }).strict();

/** Per-event property schemas (runtime-contract part 4b); `public` events need no session. */
export const ANALYTICS_EVENTS = {
  page_view: {
    public: true,
    properties: z.object({ path: text().max(512), referrer: text().max(2048).optional() }).strict(),
  },
  thread_opened: { public: false, properties: threadRef },
  analysis_requested: { public: false, properties: threadRef },
  draft_generated: {
    public: false,
    properties: z.object({ threadId: uuid, tone: tone.optional(), length: length.optional() }).strict(),
  },
  draft_copied: { public: false, properties: threadRef },
  sync_clicked: { public: false, properties: z.object({}).strict() },
} as const;
export type AnalyticsEventName = keyof typeof ANALYTICS_EVENTS;

export const analyticsEventInput = z
  .object({
    event: z.string().min(1).max(64),
    properties: z.record(z.string(), z.unknown()).optional(),
    anonymousId: uuid.optional(),
  })
  .strict();
export const analyticsResult = z.object({ ok: z.boolean() });
