import { z } from 'zod';
import { text, timestamp, uuid } from './common.ts';

export const priority = z.enum(['URGENT', 'IMPORTANT', 'NORMAL', 'LOW']);
export const replyStatus = z.enum(['NEEDS_REPLY', 'WAITING_ON_OTHERS', 'NO_REPLY_NEEDED']);
export const tone = z.enum(['default', 'professional', 'friendly']);
export const length = z.enum(['short', 'medium', 'long']);

/** What the model must answer for a triage; also the JSON schema sent as the response format. */
export const analysisModelOutput = z
  .object({
    priority,
    replyStatus,
    confidence: z.number().min(0).max(1),
    reason: z.string().max(1000),
    suggestedAction: z.string().max(1000),
  })
  .strict();

/**
 * A string of the model's answer as the API serves it. Said in the document because the model
 * read the mail, which can steer what it writes: a client that rendered one as HTML would run
 * markup a sender chose.
 */
const plain = (what: string) =>
  z.string().meta({ description: `${what} Plain text, never HTML: show it as text (escaped), never as markup.` });

export const analysis = z.object({
  id: uuid,
  userId: uuid,
  messageId: uuid,
  priority,
  replyStatus,
  confidence: z.number().min(0).max(1),
  reason: plain('Why the model chose this priority and reply status.'),
  suggestedAction: plain('What the model suggests doing next.'),
  model: z.string(),
  createdAt: timestamp,
  updatedAt: timestamp,
  correctedAt: timestamp.nullable().meta({
    description:
      "When the user corrected priority or reply status (the values are then the user's), or null: the model's values.",
  }),
});

/** The user's correction of an analysis: at least one of the two. */
export const analysisCorrection = z
  .object({ threadId: uuid, priority: priority.optional(), replyStatus: replyStatus.optional() })
  .strict()
  .refine((c) => c.priority !== undefined || c.replyStatus !== undefined, {
    message: 'give priority, replyStatus or both',
    path: ['priority'],
  });
export type Analysis = z.infer<typeof analysis>;

export const draftOptions = z
  .object({
    tone: tone.optional(),
    length: length.optional(),
    language: text().trim().min(1).max(60).optional(),
    preferredTone: text().trim().min(1).max(60).optional(),
  })
  .strict();

export const draftInput = draftOptions.extend({ threadId: uuid }).strict();

/** What the model must answer for a draft. */
export const draftModelOutput = z
  .object({ subject: z.string().max(300), body: z.string().max(8000), language: z.string().max(60) })
  .strict();

export const draftResult = z.object({
  draft: z.object({
    subject: plain("The reply's subject."),
    body: plain("The reply's text."),
    language: plain("The reply's language."),
  }),
  model: z.string(),
});
export type DraftResult = z.infer<typeof draftResult>;
