import { z } from 'zod';
import { priority, replyStatus } from './ai.ts';
import { queryInt, timestamp, uuid } from './common.ts';

/** The triage of a thread's latest message as the list shows it (the user's values once corrected). */
export const threadAnalysis = z.object({
  priority,
  replyStatus,
  confidence: z.number().min(0).max(1),
  corrected: z.boolean().meta({ description: "True when the user corrected the model's priority or reply status." }),
});

/** A query list of enum values, `URGENT,IMPORTANT`: each one of `values`, at least one, none twice. */
function enumList<T extends readonly [string, ...string[]]>(values: z.ZodEnum<{ [K in T[number]]: K }>) {
  return z
    .string()
    .max(200)
    .transform((v) => v.split(',').map((x) => x.trim()))
    .pipe(
      z
        .array(values)
        .min(1)
        .max(values.options.length)
        .refine((a) => new Set(a).size === a.length, { message: 'a value is repeated' }),
    )
    .meta({ description: `Comma-separated, any of ${values.options.join(', ')}.` });
}

export const threadSummary = z.object({
  id: uuid,
  mailThreadId: z.string(),
  subject: z.string(),
  snippet: z.string(),
  /** The sender of the message that dates the thread. */
  fromName: z.string().meta({ description: 'Display name of the sender of the latest message (may be empty)' }),
  fromAddress: z.string().meta({ description: 'Address of the sender of the latest message' }),
  lastMessageAt: timestamp,
  isUnread: z.boolean(),
  analysis: threadAnalysis
    .nullable()
    .meta({ description: "The analysis of the thread's latest message, or null while it has none." }),
});
export const threadListInput = z
  .object({
    limit: queryInt(1, 100).default(20),
    offset: queryInt(0, 1_000_000_000).default(0),
    priority: enumList(priority).optional(),
    replyStatus: enumList(replyStatus).optional(),
    // A pipe (not a bare boolean, which trpc-to-openapi would coerce: "false" would read as true).
    unread: z
      .union([z.boolean(), z.enum(['true', 'false'])])
      .transform((v) => v === true || v === 'true')
      .meta({ description: '`true`: only unread threads; `false`: only read ones.' })
      .optional(),
  })
  .strict();
export type ThreadListInput = z.output<typeof threadListInput>;
export const threadList = z.object({ threads: z.array(threadSummary), total: z.int(), hasMore: z.boolean() });

export const attachment = z.object({ filename: z.string(), mimeType: z.string(), size: z.int() });
export const message = z.object({
  id: uuid,
  threadId: uuid,
  fromName: z.string(),
  fromAddress: z.string(),
  subject: z.string(),
  snippet: z.string(),
  sentAt: timestamp,
  isUnread: z.boolean(),
  bodyText: z.string().meta({
    description: 'The plain-text body (derived from the HTML when the message has none); at most 262,144 characters.',
  }),
  bodyHtml: z.string().meta({
    description:
      'Sanitised HTML: no script, event handler, javascript: URL, frame, form, meta refresh, base or style. Remote content is not loadable as delivered ' +
      '(no tracking pixel fires): an http(s) image `src` is kept as `data-remote-src` and an http(s) `srcset` as `data-remote-srcset`, which a client copies back ' +
      'to `src`/`srcset` when the user asks to show images; `cid:` and `data:` images keep their `src`. A link keeps its `href` only when it is an absolute ' +
      'http(s) or mailto: URL; relative, protocol-relative and fragment links keep their text only. Render it in a sandboxed frame. At most 262,144 characters.',
  }),
  attachments: z.array(attachment),
  bodyOmitted: z.boolean().meta({
    description:
      "True when this message's bodies were left out of the thread answer (both are then empty strings): a thread answer carries the bodies of its " +
      'newest messages up to 2,097,152 bytes in total (their UTF-8, text and HTML together; so at most as many characters), which a thread of ' +
      'ordinary size never reaches. Fetch a left-out body with ' +
      'GET /api/mail/threads/{threadId}/messages/{messageId}/body.',
  }),
});
export const threadDetail = z.object({
  id: uuid,
  mailThreadId: z.string(),
  subject: z.string(),
  isUnread: z.boolean(),
  messages: z.array(message).meta({
    description:
      'Every message, oldest first. Bodies are included newest first up to 2,097,152 bytes of UTF-8 in all (the newest message always whole); ' +
      'older messages past that come with `bodyOmitted: true`.',
  }),
});
export const threadIdInput = z.object({ threadId: uuid }).strict();
export const messageBodyInput = z.object({ threadId: uuid, messageId: uuid }).strict();
/** One message's bodies, for a message the thread answer left them out of. */
export const messageBody = z.object({
  id: uuid,
  threadId: uuid,
  bodyText: message.shape.bodyText,
  bodyHtml: message.shape.bodyHtml,
  attachments: z.array(attachment),
});

export const syncResult = z.object({ messagesSynced: z.int(), hasMore: z.boolean(), lastSyncedAt: timestamp });
export const syncState = z.object({
  lastSyncedAt: timestamp.nullable(),
  /** Present while the backfill or resync waits for the deployment's daily mail quota: when it goes on. */
  quotaWaitUntil: timestamp.optional(),
});

export type ThreadSummary = z.infer<typeof threadSummary>;
export type ThreadList = z.infer<typeof threadList>;
export type ThreadDetail = z.infer<typeof threadDetail>;
export type Message = z.infer<typeof message>;
export type MessageBody = z.infer<typeof messageBody>;
export type SyncResult = z.infer<typeof syncResult>;
