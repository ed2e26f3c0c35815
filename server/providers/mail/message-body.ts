/**
 * Bodies of a provider message (format=full MIME tree): the plain and HTML parts decoded
 * in their charset by postal-mime (each leaf, which the provider has already split and
 * transfer-decoded, is handed to it as a one-part entity, so its charset aliases, fallbacks
 * and format=flowed apply), every leaf and body bounded (MAIL_LIMITS), the HTML sanitised (no scripts, event handlers, javascript: URLs, no
 * remote image loadable as delivered, no link but an absolute http(s) or mailto one),
 * the plain text derived from the HTML when the message has none, and attachments as
 * {filename, mimeType, size} metadata only (their content is never fetched).
 */
import { decodeHTML } from 'entities';
import PostalMime, { decodeWords } from 'postal-mime';
import sanitizeHtml from 'sanitize-html';
import { remoteSrcset, remoteUrl } from './remote-url.ts';
import type { AttachmentMeta } from '../../../db/entities/index.ts';
import type { WirePart } from '../gmail-wire.ts';
import { cleanMailText, MAIL_LIMITS } from './mail-text.ts';
import { headerValue } from './message-meta.ts';

export interface MessageBodies {
  bodyText: string;
  bodyHtml: string;
  attachments: AttachmentMeta[];
}

/**
 * The sanitiser's version, stored with each body (mail_messages.body_sanitizer): raise it with
 * any change to what sanitizeMailHtml lets through, and bodies stored under an older one are
 * fetched and sanitised again when their thread is next opened.
 * 1: remote images unloadable; 2: relative/schemeless sources dropped, data-remote-* checked;
 * 3: links keep an href only when it is absolute http(s) or mailto (relative, fragment, other schemes made inert).
 */
export const SANITIZER_VERSION = 3;

/** Where a remote image's address is kept, unloadable until a client restores it on the user's request. */
export const REMOTE_SRC = 'data-remote-src';
export const REMOTE_SRCSET = 'data-remote-srcset';

/** What an image may load as delivered: an attached part or inline data, nothing from a server. */
const isInline = (src: string) => /^\s*(cid:|data:image\/)/i.test(src);

/**
 * Remote images are not loadable as delivered (no tracking pixel fires when a thread is
 * shown): an absolute http(s) `src`/`srcset` moves to `data-remote-src`/`data-remote-srcset`,
 * which a client may copy back when the user asks to show images. `cid:` and `data:image/`
 * images stay; any other `src` (relative, schemeless, another scheme) is dropped, since it
 * would load from whatever origin renders the HTML. A `data-remote-*` the sender wrote is
 * taken as the `src`/`srcset` it stands for: kept only when it is one, normalised.
 * Styles (CSS `url()`), `background` attributes and other remote fetches are not allowed at all.
 */
function transformImg(tagName: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag {
  const { src, srcset, [REMOTE_SRC]: remoteSrc, [REMOTE_SRCSET]: remoteSet, ...rest } = attribs;
  const out: sanitizeHtml.Attributes = { ...rest };
  const remote = remoteUrl(src) ?? (src === undefined || !src.trim() ? remoteUrl(remoteSrc) : undefined);
  if (remote) out[REMOTE_SRC] = remote;
  else if (src !== undefined && isInline(src)) out.src = src.trim();
  const set = remoteSrcset(srcset ?? remoteSet);
  if (set) out[REMOTE_SRCSET] = set;
  return { tagName, attribs: out };
}

/** A link target that means the same wherever the HTML is rendered: an absolute http(s) URL or a mailto: address. */
const isAbsoluteLink = (href: string) => remoteUrl(href) !== undefined || /^mailto:/i.test(href.trim());

/**
 * Links keep an `href` only when it is absolute http(s) or mailto (runtime contract §4): a
 * relative, protocol-relative or fragment link (`/auth/logout`, `../api/mail/sync`, `#top`,
 * `?connected=1`) resolves against whatever origin renders the body, so a client that shows it
 * inline would turn a click into a request to its own API. Such a link keeps its text, and no href.
 */
function transformLink(tagName: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag {
  const { href, rel: _rel, target: _target, ...rest } = attribs;
  if (href === undefined || !isAbsoluteLink(href)) return { tagName, attribs: rest };
  return { tagName, attribs: { ...rest, href: href.trim(), rel: 'noopener noreferrer nofollow', target: '_blank' } };
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
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['cid', 'data'] },
  allowProtocolRelative: false,
  transformTags: { a: transformLink, img: transformImg },
};

export function sanitizeMailHtml(html: string): string {
  return sanitizeHtml(html, HTML_OPTIONS).trim();
}

/** Readable plain text from HTML: block ends become line breaks, tags and script/style content go. */
export function htmlToText(html: string): string {
  const marked = html.replace(/<br\s*\/?>/gi, '\n').replace(/<\/(p|div|li|tr|h[1-6]|blockquote|table)\s*>/gi, '\n');
  const text = decodeHTML(sanitizeHtml(marked, { allowedTags: [], allowedAttributes: {} }));
  return text
    .replace(/[ \t\u00a0]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function isAttachment(part: WirePart): boolean {
  const disposition = headerValue(part.headers, 'Content-Disposition') ?? '';
  return Boolean(part.filename) || /^\s*attachment/i.test(disposition);
}

/** Base64 characters that decode to at most `bytes` bytes (whole quads). */
const base64For = (bytes: number) => Math.floor((bytes * 4) / 3 / 4) * 4;

/** A leaf's bytes (base64url from the provider, cut to `maxChars` before postal-mime sees them) as text in its own charset. */
async function decodeLeaf(part: WirePart, data: string, maxChars: number): Promise<string> {
  const base64 = data.slice(0, maxChars).replace(/[-_]/g, (c) => (c === '-' ? '+' : '/'));
  const type = (headerValue(part.headers, 'Content-Type') ?? part.mimeType ?? 'text/plain').replace(/[\r\n]+/g, ' ');
  const parsed = await PostalMime.parse(`Content-Type: ${type}\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64}`);
  return parsed.html ?? parsed.text ?? '';
}

function attachmentOf(part: WirePart): AttachmentMeta {
  return {
    filename: cleanMailText(decodeWords(part.filename || 'attachment'), MAIL_LIMITS.filename),
    mimeType: cleanMailText(part.mimeType || 'application/octet-stream', MAIL_LIMITS.mimeType),
    size: Math.max(0, Math.trunc(Number(part.body?.size) || 0)),
  };
}

export async function extractBodies(payload: WirePart | undefined): Promise<MessageBodies> {
  const leaves: { part: WirePart; html: boolean; data: string }[] = [];
  const attachments: AttachmentMeta[] = [];
  const walk = (part: WirePart, depth: number) => {
    if (depth > 20) return;
    const mime = (part.mimeType ?? '').toLowerCase();
    if (mime.startsWith('multipart/') && part.parts?.length) {
      for (const child of part.parts) walk(child, depth + 1);
      return;
    }
    if (isAttachment(part)) {
      if (attachments.length < MAIL_LIMITS.attachments) attachments.push(attachmentOf(part));
      return;
    }
    const data = part.body?.data;
    if (data && (mime === 'text/plain' || mime === 'text/html') && leaves.length < MAIL_LIMITS.leaves)
      leaves.push({ part, html: mime === 'text/html', data });
  };
  if (payload) walk(payload, 0);
  const plain: string[] = [];
  const html: string[] = [];
  // The plain leaves together, and the HTML ones, are decoded up to MAIL_LIMITS.part each: many big leaves cost what one does.
  const left = { plain: base64For(MAIL_LIMITS.part), html: base64For(MAIL_LIMITS.part) };
  for (const leaf of leaves) {
    const kind = leaf.html ? 'html' : 'plain';
    if (left[kind] <= 0) continue;
    const take = Math.min(left[kind], leaf.data.length); // the budget is whole quads, so a cut leaf still decodes
    left[kind] -= take;
    (leaf.html ? html : plain).push(await decodeLeaf(leaf.part, leaf.data, take));
  }
  const rawHtml = cleanMailText(html.join('\n'), MAIL_LIMITS.part);
  const bodyHtml = rawHtml ? cleanMailText(sanitizeMailHtml(rawHtml), MAIL_LIMITS.body) : '';
  const text = plain.length ? plain.join('\n').replace(/\r\n/g, '\n') : rawHtml ? htmlToText(rawHtml) : '';
  return { bodyText: cleanMailText(text, MAIL_LIMITS.body), bodyHtml, attachments };
}
