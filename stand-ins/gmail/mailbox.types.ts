/**
 * The Gmail stand-in's data model as plain types: messages, attachments, history entries and
 * watches as the mailbox keeps them, before any rendering into Gmail's wire shapes.
 */

export interface Address {
  name: string;
  address: string;
}

export interface AttachmentSpec {
  filename: string;
  mimeType: string;
  /** Size in bytes of the decoded attachment. */
  size: number;
}

export interface StandInAttachment extends AttachmentSpec {
  attachmentId: string;
}

export interface StandInMessage {
  id: string;
  threadId: string;
  labelIds: string[];
  from: Address;
  to: Address[];
  cc: Address[];
  subject: string;
  /** Plain text (NOT HTML-escaped); the wire `snippet` is HTML-escaped like Gmail's. */
  snippet: string;
  /** Epoch ms. */
  internalDate: number;
  bodyText?: string;
  bodyHtml?: string;
  attachments: StandInAttachment[];
  /** Id of the last history record that touched this message. */
  historyId: number;
  /** RFC 5322 Message-ID header value, e.g. `<...@example.com>`. */
  messageIdHeader: string;
  inReplyTo?: string;
  references: string[];
  /** Set when the message was added from raw RFC 822 bytes (addRawMessage): served as converted. */
  raw?: RawPayload;
  /** Headers besides those made from the fields above (List-Unsubscribe, Precedence). */
  extraHeaders?: WireHeader[];
}

export interface WireHeader {
  name: string;
  value: string;
}

/** One node of Gmail's MIME tree (`payload`, `payload.parts[i]`, ...). */
export interface WirePart {
  partId: string;
  mimeType: string;
  filename: string;
  headers: WireHeader[];
  body: { size: number; data?: string; attachmentId?: string };
  parts?: WirePart[];
}

/** A raw message as the stand-in serves it: its MIME tree, its size and the bytes behind its attachmentIds (base64url). */
export interface RawPayload {
  payload: WirePart;
  sizeEstimate: number;
  attachmentData: Record<string, string>;
}

/** What `addRawMessage` accepts besides the bytes. */
export interface RawMessageOptions {
  /** Replaces the default labels `['INBOX', 'UNREAD']`. */
  labelIds?: string[];
  /** Replaces the date taken from the Date header (epoch ms). */
  internalDate?: number;
  /** Files the message in this thread instead of threading it by In-Reply-To/References. */
  threadId?: string;
}

/** What `addMessage` accepts. Everything is optional. */
export interface NewMessage {
  id?: string;
  threadId?: string;
  /** Replaces the default labels `['INBOX', 'UNREAD']`. */
  labelIds?: string[];
  /** Sets/clears `UNREAD` after `labelIds` was applied. */
  read?: boolean;
  from?: Address;
  to?: Address | Address[];
  cc?: Address[];
  subject?: string;
  /** Defaults to the first ~100 chars of the text (or the tag-stripped HTML). */
  snippet?: string;
  internalDate?: number;
  /** When neither bodyText nor bodyHtml is given a default text body is used; give `null` to omit one. */
  bodyText?: string | null;
  bodyHtml?: string | null;
  attachments?: AttachmentSpec[];
  /** Headers besides those made from the fields above (List-Unsubscribe, Precedence). */
  headers?: WireHeader[];
}

export interface SeedOptions {
  /** PRNG seed; defaults to the stand-in's seed. */
  seed?: number;
  /** Reference time (ms) for the generated dates; default Date.now(). */
  now?: number;
  /** Messages are spread over this many days before `now` (default 21). */
  spanDays?: number;
  /** Share of latest-in-thread received messages that are read (default 0.4). */
  readRatio?: number;
  /** Share of threads that are archived, i.e. have no INBOX label (default 0). */
  archivedRatio?: number;
  /** Insert SENT replies from the owner into some multi-message threads (default true). They don't count toward `count`. */
  sentReplies?: boolean;
}

export type HistoryType = 'messageAdded' | 'messageDeleted' | 'labelAdded' | 'labelRemoved';

export interface HistoryEntry {
  id: number;
  type: HistoryType;
  /** Message snapshot after the change (before it, for deletions). */
  message: { id: string; threadId: string; labelIds: string[] };
  /** Labels added/removed, for label changes. */
  labelIds?: string[];
}

export interface WatchRecord {
  kind: 'watch' | 'stop';
  topicName?: string;
  labelIds?: string[];
  labelFilterBehavior?: string;
  at: number;
}

export interface ActiveWatch {
  topicName: string;
  labelIds: string[];
  labelFilterBehavior: 'include' | 'exclude';
  expiration: number;
}

export type Json = Record<string, unknown>;
