/**
 * Strings from mail as the service stores, serves and prompts with them: no U+0000
 * (PostgreSQL text and jsonb cannot hold it), no lone surrogate (replaced by U+FFFD), and
 * no longer than the field's limit (cut on a code point, never inside a pair).
 */
import { decodeHTML } from 'entities';

/** Limits per field of one message, in UTF-16 code units. */
export const MAIL_LIMITS = {
  /** A raw header value before it is parsed (addresses and encoded words parse in linear time, but not for free). */
  header: 8_192,
  name: 256,
  /** RFC 5321 allows 64 + 1 + 255. */
  address: 320,
  /** RFC 5322's line limit. */
  subject: 998,
  snippet: 512,
  label: 128,
  labels: 100,
  filename: 255,
  mimeType: 127,
  /**
   * Attachments listed per message: every one a real message carries (500 are listed as 500).
   * The bound only stops a crafted MIME tree of tiny parts from making a message's list
   * megabytes long (each entry is up to ~400 characters).
   */
  attachments: 5_000,
  /** A message's text leaves, and its HTML leaves, together before they are decoded and sanitised (bytes). */
  part: 2 * 1024 * 1024,
  /** Text and HTML leaves of one message decoded at most (postal-mime runs once per leaf). */
  leaves: 64,
  /**
   * The text and the sanitised HTML of one message as stored and answered. Every copy of a body
   * (the parse's result, the statement storing it, the row read back, the JSON answer) is work
   * on the event loop that grows with it, so this bound is what keeps one hostile message from
   * holding the loop while its thread is opened (bench item 8 measures it). Gmail's own web
   * client clips at 102 KB.
   */
  body: 256 * 1024,
} as const;

export function cleanMailText(value: string, max = Infinity): string {
  let text = value.includes('\u0000') ? value.replaceAll('\u0000', '') : value;
  if (text.length > max) {
    const code = text.charCodeAt(max - 1);
    text = text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
  }
  return text.toWellFormed();
}

/** The provider's snippet is HTML-escaped plain text. */
export const snippetText = (snippet: string): string => cleanMailText(decodeHTML(snippet), MAIL_LIMITS.snippet);
