/**
 * The shapes of the mail provider's answers that the service reads, as Zod schemas: every
 * answer is checked before use (a garbled or truncated body is a provider failure).
 */
import { z } from 'zod';
import { AppError } from '../domain/errors.ts';

/** An answer checked against its schema; a garbled one is the provider's failure (SYNC_FAILED). */
export function parse<T>(schema: z.ZodType<T>, data: unknown, what: string): T {
  const r = schema.safeParse(data);
  if (!r.success)
    throw new AppError('SYNC_FAILED', { cause: new Error(`malformed ${what} answer from the mail provider`) });
  return r.data;
}
/** An answer asked for as a stream (gmail-errors.ts okStream): its body, not yet read. */
export const stream = z.custom<AsyncIterable<Uint8Array>>(
  (v) => typeof (v as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function',
);

export interface WirePart {
  mimeType?: string;
  filename?: string;
  headers?: { name: string; value: string }[];
  body?: { size?: number; data?: string; attachmentId?: string };
  parts?: WirePart[];
}
const header = z.object({ name: z.string().catch(''), value: z.string().catch('') });
const part: z.ZodType<WirePart> = z.lazy(() =>
  z.object({
    mimeType: z.string().optional(),
    filename: z.string().optional(),
    headers: z.array(header).optional(),
    body: z
      .object({ size: z.number().optional(), data: z.string().optional(), attachmentId: z.string().optional() })
      .optional(),
    parts: z.array(part).optional(),
  }),
);
const id = z.string().min(1);
const numericId = z.string().regex(/^\d+$/);
export const messageSchema = z.object({
  id,
  threadId: id,
  labelIds: z.array(z.string()).default([]),
  snippet: z.string().default(''),
  internalDate: numericId.optional(),
  payload: part.optional(),
});
const ref = z.object({ id, threadId: z.string().default(''), labelIds: z.array(z.string()).optional() });
const labelChange = z.object({ message: ref, labelIds: z.array(z.string()).default([]) });
const recordSchema = z.object({
  id: numericId,
  messagesAdded: z.array(z.object({ message: ref })).default([]),
  messagesDeleted: z.array(z.object({ message: ref })).default([]),
  labelsAdded: z.array(labelChange).default([]),
  labelsRemoved: z.array(labelChange).default([]),
});
/** threads.get with format=metadata: the thread's messages, each as messages.get would give it. */
export const threadMetaSchema = z.object({ messages: z.array(messageSchema).default([]) });
export const listSchema = z.object({
  messages: z.array(z.object({ id, threadId: id })).default([]),
  nextPageToken: z.string().optional(),
});
export const historySchema = z.object({
  history: z.array(recordSchema).default([]),
  nextPageToken: z.string().optional(),
  historyId: numericId,
});
export const threadSchema = z.object({ id, messages: z.array(messageSchema).default([]) });
/** labels.get: only the count is read (Gmail omits a count it does not have). */
export const labelCountsSchema = z.object({ messagesTotal: z.number().int().nonnegative().optional() });
export const profileSchema = z.object({ emailAddress: z.string(), historyId: numericId });
export const watchSchema = z.object({ historyId: numericId, expiration: numericId });

export type GmailMessage = z.infer<typeof messageSchema>;
export type HistoryRecord = z.infer<typeof recordSchema>;
