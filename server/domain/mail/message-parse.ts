/**
 * Provider message -> stored metadata: sender name and address, subject (RFC 2047 encoded
 * words decoded), snippet (the provider HTML-escapes it), timestamp and labels.
 */
import type { GmailMessage, WirePart } from '../../providers/gmail.ts';

export interface MessageMeta {
  providerMessageId: string;
  providerThreadId: string;
  labelIds: string[];
  fromName: string;
  fromAddress: string;
  subject: string;
  snippet: string;
  sentAt: Date;
}

/**
 * Text from mail as the service stores and serves it: no U+0000 (PostgreSQL text cannot hold
 * it) and no lone surrogate (not valid Unicode: replaced by U+FFFD), whatever the message held.
 */
export function cleanMailText(value: string): string {
  return value.replace(/\u0000/g, '').toWellFormed();
}

export function headerValue(headers: WirePart['headers'], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers?.find((h) => h.name.toLowerCase() === lower)?.value;
}

function decoderFor(charset: string): TextDecoder {
  try {
    return new TextDecoder(charset.trim().toLowerCase() || 'utf-8');
  } catch {
    return new TextDecoder('utf-8');
  }
}

export function decodeCharset(bytes: Uint8Array, charset = 'utf-8'): string {
  return decoderFor(charset).decode(bytes);
}

/** RFC 2047 `=?charset?B|Q?text?=` words; whitespace between adjacent encoded words is dropped. */
export function decodeEncodedWords(value: string): string {
  const word = /=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g;
  const joined = value.replace(/(=\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)\s+(?==\?)/g, '$1');
  return joined.replace(word, (whole, charset: string, enc: string, text: string) => {
    try {
      const cs = charset.split('*')[0]!;
      const bytes =
        enc.toUpperCase() === 'B'
          ? Buffer.from(text, 'base64')
          : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');
      return decodeCharset(bytes, cs);
    } catch {
      return whole;
    }
  });
}

const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', '#39': "'" };

/** Decodes the HTML entities the provider uses in snippets (and any numeric ones). */
export function unescapeHtml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ent: string) => {
    if (ent[0] === '#') {
      const code = ent[1] === 'x' || ent[1] === 'X' ? parseInt(ent.slice(2), 16) : parseInt(ent.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[ent.toLowerCase()] ?? whole;
  });
}

/** The first mailbox of an address header: `Name <a@b>`, `"Last, First" <a@b>`, `<a@b>`, `a@b (Name)`, `a@b`. */
export function parseAddress(raw: string | undefined): { name: string; address: string } {
  const value = decodeEncodedWords((raw ?? '').trim());
  if (!value) return { name: '', address: '' };
  const angle = /^\s*(?:"((?:[^"\\]|\\.)*)"|([^<]*?))\s*<([^>]*)>/.exec(value);
  if (angle) {
    const name = angle[1] !== undefined ? angle[1].replace(/\\(.)/g, '$1') : (angle[2] ?? '');
    return { name: name.trim(), address: angle[3]!.trim() };
  }
  const comment = /^\s*([^\s(,]+@[^\s(,]+)\s*\(([^)]*)\)/.exec(value);
  if (comment) return { name: comment[2]!.trim(), address: comment[1]! };
  const first = value.split(',')[0]!.trim();
  return first.includes('@') ? { name: '', address: first } : { name: first, address: '' };
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
  const from = parseAddress(headerValue(headers, 'From'));
  return {
    providerMessageId: m.id,
    providerThreadId: m.threadId,
    labelIds: [...new Set(m.labelIds)],
    fromName: cleanMailText(from.name),
    fromAddress: cleanMailText(from.address),
    subject: cleanMailText(decodeEncodedWords(headerValue(headers, 'Subject') ?? '').trim()),
    snippet: cleanMailText(unescapeHtml(m.snippet)),
    sentAt: sentAtOf(m),
  };
}
