/**
 * A provider message's metadata as the service keeps it: sender (first mailbox of From,
 * groups unwrapped), subject (RFC 2047 words decoded), snippet, time and labels. Header
 * words and address lists are parsed by postal-mime (linear-time address tokenizer, the
 * WHATWG charsets with mail's aliases and code pages), on header values bounded first.
 */
import { addressParser, decodeWords } from 'postal-mime';
import type { GmailMessage, WirePart } from '../gmail-wire.ts';
import { cleanMailText, MAIL_LIMITS, snippetText } from './mail-text.ts';

export interface MessageMeta {
  providerMessageId: string;
  providerThreadId: string;
  labelIds: string[];
  fromName: string;
  fromAddress: string;
  subject: string;
  snippet: string;
  sentAt: Date;
  /** Bulk mail by its headers: List-Unsubscribe, or Precedence bulk, list or junk (RFC 2369, RFC 3834). */
  bulk?: boolean;
}

/** The headers a metadata read asks for: what the list shows and what tells bulk mail. */
export const META_HEADERS = ['From', 'Subject', 'Date', 'List-Unsubscribe', 'Precedence'];

function isBulk(headers: WirePart['headers']): boolean {
  if (headerValue(headers, 'List-Unsubscribe')?.trim()) return true;
  const precedence = headerValue(headers, 'Precedence')?.trim().toLowerCase();
  return precedence === 'bulk' || precedence === 'list' || precedence === 'junk';
}

/** The first header of that name (case-insensitive), cut to MAIL_LIMITS.header. */
export function headerValue(headers: WirePart['headers'], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers?.find((h) => h.name.toLowerCase() === lower)?.value.slice(0, MAIL_LIMITS.header);
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/** The first mailbox of an address header; a bare name when it holds no address. */
export function firstMailbox(raw: string | undefined): { name: string; address: string } {
  const [first] = addressParser(raw ?? '', { flatten: true });
  return {
    name: cleanMailText(oneLine(first?.name ?? ''), MAIL_LIMITS.name),
    address: cleanMailText(oneLine(first?.address ?? ''), MAIL_LIMITS.address),
  };
}

function sentAtOf(m: GmailMessage): Date {
  const internal = m.internalDate ? new Date(Number(m.internalDate)) : undefined;
  if (internal && !Number.isNaN(internal.getTime())) return internal;
  const date = headerValue(m.payload?.headers, 'Date');
  const parsed = date ? new Date(date) : undefined;
  return parsed && !Number.isNaN(parsed.getTime()) ? parsed : new Date(0);
}

export function toMessageMeta(m: GmailMessage): MessageMeta {
  const headers = m.payload?.headers;
  const from = firstMailbox(headerValue(headers, 'From'));
  return {
    providerMessageId: m.id,
    providerThreadId: m.threadId,
    labelIds: [...new Set(m.labelIds)].slice(0, MAIL_LIMITS.labels).map((l) => cleanMailText(l, MAIL_LIMITS.label)),
    fromName: from.name,
    fromAddress: from.address,
    subject: cleanMailText(oneLine(decodeWords(headerValue(headers, 'Subject') ?? '')), MAIL_LIMITS.subject),
    snippet: snippetText(m.snippet),
    sentAt: sentAtOf(m),
    bulk: isBulk(headers),
  };
}
