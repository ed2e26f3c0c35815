import { z } from 'zod';
import { queryInt, timestamp, uuid } from './common.ts';

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
});
export const threadListInput = z
  .object({
    limit: queryInt(1, 100).default(20),
    offset: queryInt(0, 1_000_000_000).default(0),
  })
  .strict();
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
  bodyText: z.string().meta({ description: 'The plain-text body (derived from the HTML when the message has none); at most 262,144 characters.' }),
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
      'True when this message\'s bodies were left out of the thread answer (both are then empty strings): a thread answer carries the bodies of its ' +
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
