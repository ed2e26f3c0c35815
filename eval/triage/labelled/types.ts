/**
 * The shape of a labelled message of the triage eval, and the mailbox it belongs to. Labels
 * are what the owner would say, not what a model is expected to manage: a phishing mail is
 * LOW whatever urgency it claims, and a message that instructs the model is labelled by its
 * real content. The values are the API's own enums (shared/schemas/ai.ts).
 */
import type { z } from 'zod';
import type { priority, replyStatus } from '../../../shared/schemas/ai.ts';

export type Priority = z.infer<typeof priority>;
export type ReplyStatus = z.infer<typeof replyStatus>;

export interface LabelledMessage {
  /** Stable and unique: `<language>-<what>-<n>`; reports and --json name misses by it. */
  id: string;
  fromName: string;
  fromAddress: string;
  subject: string;
  bodyText: string;
  expected: { priority: Priority; replyStatus: ReplyStatus };
  /** Language first (en, de, fr, es, ja), then kinds: newsletter, phishing, automated, injection, owner-sent, … */
  tags: string[];
}

/** The mailbox every message was received in (or, for `owner-sent`, sent from). */
export const OWNER = { name: 'Sam Rivera', address: 'owner@example.com' } as const;

/** When every message was sent: a Tuesday morning, so "today" and "by Friday" mean one thing. */
export const SENT_AT = new Date('2026-03-10T08:30:00Z');
