/**
 * Bodies of a provider message (format=full MIME tree): the plain and HTML parts decoded
 * in their charset, the HTML sanitised (no scripts, event handlers, javascript: URLs, no
 * remote image loadable as delivered),
 * the plain text derived from the HTML when the message has none, and attachments as
 * {filename, mimeType, size} metadata only (their content is never fetched).
 */
import sanitizeHtml from 'sanitize-html';
import type { AttachmentMeta } from '../../../db/entities/index.ts';
import type { WirePart } from '../../providers/gmail.ts';
import { cleanMailText, decodeCharset, headerValue, unescapeHtml } from './message-parse.ts';

export interface MessageBodies {
  bodyText: string;
  bodyHtml: string;
  attachments: AttachmentMeta[];
}

/** Where a remote image's address is kept, unloadable until a client restores it on the user's request. */
export const REMOTE_SRC = 'data-remote-src';
export const REMOTE_SRCSET = 'data-remote-srcset';

const isRemote = (url: string | undefined) => /^\s*https?:\/\//i.test(url ?? '');

/**
 * Remote images are not loadable as delivered (no tracking pixel fires when a thread is
 * shown): an http(s) `src`/`srcset` moves to `data-remote-src`/`data-remote-srcset`, which a
 * client may copy back when the user asks to show images. `cid:` and `data:` images stay.
 * Styles (CSS `url()`), `background` attributes and other remote fetches are not allowed at all.
 */
function transformImg(tagName: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag {
  const { src, srcset, ...rest } = attribs;
  const out: sanitizeHtml.Attributes = { ...rest };
  if (isRemote(src)) out[REMOTE_SRC] = src!.trim();
  else if (src !== undefined) out.src = src;
  if (srcset !== undefined && srcset.split(',').every((c) => isRemote(c.trim().split(/\s+/)[0]))) out[REMOTE_SRCSET] = srcset.trim();
  return { tagName, attribs: out };
}

const HTML_OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'font', 'center'],
  allowedAttributes: {
    a: ['href', 'name', 'title', 'rel', 'target'],
    img: ['src', 'alt', 'title', 'width', 'height', REMOTE_SRC, REMOTE_SRCSET],
    font: ['color', 'size'],
    td: ['colspan', 'rowspan', 'align', 'valign'],
    th: ['colspan', 'rowspan', 'align', 'valign'],
    '*': ['dir', 'lang'],
  },
  allowedSchemes: ['http', 'https', 'mailto', 'tel'],
  allowedSchemesByTag: { img: ['cid', 'data'] },
  allowProtocolRelative: false,
  transformTags: { a: sanitizeHtml.simpleTransform('a', { rel: 'noopener noreferrer nofollow', target: '_blank' }), img: transformImg },
};

export function sanitizeMailHtml(html: string): string {
  return sanitizeHtml(html, HTML_OPTIONS).trim();
}

/** Readable plain text from HTML: block ends become line breaks, tags and script/style content go. */
export function htmlToText(html: string): string {
  const marked = html.replace(/<br\s*\/?>/gi, '\n').replace(/<\/(p|div|li|tr|h[1-6]|blockquote|table)\s*>/gi, '\n');
  const text = unescapeHtml(sanitizeHtml(marked, { allowedTags: [], allowedAttributes: {} }));
  return text
    .replace(/[ \t\u00a0]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function charsetOf(part: WirePart): string {
  const type = headerValue(part.headers, 'Content-Type') ?? '';
  return /charset\s*=\s*"?([^";\s]+)"?/i.exec(type)?.[1] ?? 'utf-8';
}

function isAttachment(part: WirePart): boolean {
  const disposition = headerValue(part.headers, 'Content-Disposition') ?? '';
  return Boolean(part.filename) || /^\s*attachment/i.test(disposition);
}

export function extractBodies(payload: WirePart | undefined): MessageBodies {
  const plain: string[] = [];
  const html: string[] = [];
  const attachments: AttachmentMeta[] = [];
  const walk = (part: WirePart, depth: number) => {
    if (depth > 20) return;
    const mime = (part.mimeType ?? '').toLowerCase();
    if (mime.startsWith('multipart/') && part.parts?.length) {
      for (const child of part.parts) walk(child, depth + 1);
      return;
    }
    if (isAttachment(part)) {
      attachments.push({
        filename: cleanMailText(part.filename || 'attachment'),
        mimeType: cleanMailText(part.mimeType || 'application/octet-stream'),
        size: Math.max(0, Math.trunc(Number(part.body?.size) || 0)),
      });
      return;
    }
    const data = part.body?.data;
    if (!data || (mime !== 'text/plain' && mime !== 'text/html')) return;
    const text = decodeCharset(Buffer.from(data, 'base64url'), charsetOf(part));
    (mime === 'text/plain' ? plain : html).push(text);
  };
  if (payload) walk(payload, 0);
  const rawHtml = cleanMailText(html.join('\n'));
  const bodyHtml = rawHtml ? sanitizeMailHtml(rawHtml) : '';
  const bodyText = plain.length ? cleanMailText(plain.join('\n').replace(/\r\n/g, '\n')) : rawHtml ? htmlToText(rawHtml) : '';
  return { bodyText, bodyHtml, attachments };
}
