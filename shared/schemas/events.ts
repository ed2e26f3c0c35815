/**
 * The live events of GET /api/mail/events and the `mail.events` subscription. Every event
 * carries an `id` (the SSE `id:` line, tRPC's tracked id): send the last one back as
 * `Last-Event-ID` (REST) or `lastEventId` (tRPC) to resume.
 */
import { z } from 'zod';
import { timestamp, uuid } from './common.ts';

/** Where the account stands. */
export const syncPhase = z.enum(['backfilling', 'current', 'catching_up', 'needs_reconnect']);

/** `sync`: sent when a stream opens and whenever the account's sync state changes. */
export const syncEvent = z.object({
  type: z.literal('sync'),
  state: syncPhase,
  lastSyncedAt: timestamp.nullable(),
  /** While backfilling: inbox messages stored so far, and the provider's inbox count when known. */
  progress: z.object({ stored: z.int().min(0), estimatedTotal: z.int().min(0).nullable() }).nullable(),
  /** Present while the backfill or resync waits for the deployment's daily mail quota: when it goes on. */
  quotaWaitUntil: timestamp.optional(),
});

/** The most thread ids one `threads` event names; more become a `reset`. */
export const MAX_EVENT_THREAD_IDS = 100;

/** `threads`: the stored state of these threads changed (read them again); sent after the commit. */
export const threadsEvent = z.object({
  type: z.literal('threads'),
  threadIds: z.array(uuid).min(1).max(MAX_EVENT_THREAD_IDS),
});

/** `reset`: too much changed, or the events since the given id are no longer known: re-read the list. */
export const resetEvent = z.object({ type: z.literal('reset') });

export const mailEvent = z.discriminatedUnion('type', [syncEvent, threadsEvent, resetEvent]);

/** The subscription's input: tRPC's client fills `lastEventId` when it reconnects. */
export const mailEventsInput = z
  .object({ lastEventId: z.string().max(40).nullish() })
  .strict()
  .optional();

export type SyncPhase = z.infer<typeof syncPhase>;
export type SyncEvent = z.infer<typeof syncEvent>;
export type ThreadsEvent = z.infer<typeof threadsEvent>;
export type ResetEvent = z.infer<typeof resetEvent>;
export type MailEvent = z.infer<typeof mailEvent>;
