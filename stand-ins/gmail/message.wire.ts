/**
 * Renders the stand-in's messages in the Gmail REST v1 wire shapes (minimal / metadata / full
 * MIME tree, history records, attachment bytes) and the text helpers they need. No state.
 */
import { prng } from '../seeded-random.ts';
import type { Address, HistoryEntry, Json, StandInAttachment, StandInMessage, WirePart } from './mailbox.types.ts';

export const b64url = (s: string | Buffer): string =>
  (typeof s === 'string' ? Buffer.from(s, 'utf8') : s).toString('base64url');

export const escapeHtml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

const decodeEntities = (s: string): string =>
  s
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

export function htmlToText(html: string): string {
  return decodeEntities(
    html
      .replace(/<(style|script)[^>]*>[\s\S]*?<\/\1>/gi, ' ')
      .replace(/<br\s*\/?>|<\/p>/gi, '\n')
      .replace(/<[^>]+>/g, ' '),
  );
}

export function makeSnippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= 100 ? flat : flat.slice(0, 100).trimEnd();
}

export function formatAddress(a: Address): string {
  if (!a.name) return a.address;
  const name = /^[\w .'-]+$/.test(a.name) ? a.name : `"${a.name.replace(/["\\]/g, '\\$&')}"`;
  return `${name} <${a.address}>`;
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** RFC 2822 date in UTC, e.g. `Tue, 05 Mar 2024 10:00:00 +0000`. */
export function rfc2822(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${DAYS[d.getUTCDay()]}, ${p(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

// ---------------------------------------------------------------- wire rendering

export type MessageFormat = 'minimal' | 'metadata' | 'full';

export function messageHeaders(m: StandInMessage, rootContentType: string): { name: string; value: string }[] {
  const h: { name: string; value: string }[] = [
    { name: 'MIME-Version', value: '1.0' },
    { name: 'Date', value: rfc2822(m.internalDate) },
    { name: 'Message-ID', value: m.messageIdHeader },
  ];
  if (m.inReplyTo) h.push({ name: 'In-Reply-To', value: m.inReplyTo });
  if (m.references.length) h.push({ name: 'References', value: m.references.join(' ') });
  h.push({ name: 'Subject', value: m.subject });
  h.push({ name: 'From', value: formatAddress(m.from) });
  h.push({ name: 'To', value: m.to.map(formatAddress).join(', ') });
  if (m.cc.length) h.push({ name: 'Cc', value: m.cc.map(formatAddress).join(', ') });
  for (const x of m.extraHeaders ?? []) h.push({ name: x.name, value: x.value });
  h.push({ name: 'Content-Type', value: rootContentType });
  return h;
}

type Part = WirePart;

const boundaryFor = (m: StandInMessage, kind: string) => `000000000000${m.id.slice(-8)}${kind}`;

function textPart(partId: string, mimeType: string, content: string): Part {
  return {
    partId,
    mimeType,
    filename: '',
    headers: [
      { name: 'Content-Type', value: `${mimeType}; charset="UTF-8"` },
      { name: 'Content-Transfer-Encoding', value: 'quoted-printable' },
    ],
    body: { size: Buffer.byteLength(content, 'utf8'), data: b64url(content) },
  };
}

function multipart(m: StandInMessage, partId: string, subtype: string, children: Part[]): Part {
  const mimeType = `multipart/${subtype}`;
  const prefix = partId === '' ? '' : `${partId}.`;
  const renumber = (p: Part, id: string): Part => ({
    ...p,
    partId: id,
    ...(p.parts ? { parts: p.parts.map((c, i) => renumber(c, `${id}.${i}`)) } : {}),
  });
  return {
    partId,
    mimeType,
    filename: '',
    headers: [{ name: 'Content-Type', value: `${mimeType}; boundary="${boundaryFor(m, subtype.slice(0, 3))}"` }],
    body: { size: 0 },
    parts: children.map((c, i) => renumber(c, `${prefix}${i}`)),
  };
}

/** The full MIME tree; the root part carries the message headers. */
export function mimeTree(m: StandInMessage): Part {
  const bodies: Part[] = [];
  if (m.bodyText !== undefined) bodies.push(textPart('', 'text/plain', m.bodyText));
  if (m.bodyHtml !== undefined) bodies.push(textPart('', 'text/html', m.bodyHtml));
  if (bodies.length === 0) bodies.push(textPart('', 'text/plain', ''));
  let root: Part = bodies.length === 1 ? bodies[0]! : multipart(m, '', 'alternative', bodies);
  if (m.attachments.length) {
    const atts: Part[] = m.attachments.map((a, i) => ({
      partId: '',
      mimeType: a.mimeType,
      filename: a.filename,
      headers: [
        { name: 'Content-Type', value: `${a.mimeType}; name="${a.filename}"` },
        { name: 'Content-Disposition', value: `attachment; filename="${a.filename}"` },
        { name: 'Content-Transfer-Encoding', value: 'base64' },
        { name: 'X-Attachment-Id', value: `f_${m.id.slice(-6)}${i}` },
      ],
      body: { attachmentId: a.attachmentId, size: a.size },
    }));
    root = multipart(m, '', 'mixed', [root, ...atts]);
  }
  const contentType = root.headers.find((h) => h.name === 'Content-Type')!.value;
  const ownHeaders = root.headers.filter((h) => h.name !== 'Content-Type');
  root.headers = [...messageHeaders(m, contentType), ...ownHeaders];
  return root;
}

export function sizeEstimate(m: StandInMessage): number {
  const headerBytes = messageHeaders(m, 'multipart/alternative').reduce(
    (n, h) => n + h.name.length + h.value.length + 4,
    0,
  );
  const text = Buffer.byteLength(m.bodyText ?? '', 'utf8') + Buffer.byteLength(m.bodyHtml ?? '', 'utf8');
  const atts = m.attachments.reduce((n, a) => n + Math.ceil((a.size * 4) / 3) + 200, 0);
  return headerBytes + Math.ceil(text * 1.05) + atts + 300;
}

export function renderMessage(m: StandInMessage, format: MessageFormat, metadataHeaders: string[] = []): Json {
  const out: Json = {
    id: m.id,
    threadId: m.threadId,
    labelIds: [...m.labelIds],
    snippet: escapeHtml(m.snippet),
    sizeEstimate: m.raw ? m.raw.sizeEstimate : sizeEstimate(m),
    historyId: String(m.historyId),
    internalDate: String(m.internalDate),
  };
  if (format === 'minimal') return out;
  // A message added from raw bytes is served as converted (raw-message.ts).
  const tree = m.raw ? m.raw.payload : mimeTree(m);
  if (format === 'full') {
    out.payload = tree;
    return out;
  }
  const wanted = metadataHeaders.map((h) => h.toLowerCase());
  out.payload = {
    mimeType: tree.mimeType,
    headers: wanted.length ? tree.headers.filter((h) => wanted.includes(h.name.toLowerCase())) : tree.headers,
  };
  return out;
}

/** Deterministic filler content of the given size for attachments.get. */
export function attachmentBytes(a: StandInAttachment): Buffer {
  const buf = Buffer.alloc(a.size);
  const rnd = prng(a.attachmentId.length * 7919 + a.size);
  for (let i = 0; i < a.size; i++) buf[i] = Math.floor(rnd() * 256);
  return buf;
}

/** A history record on the wire; `deltaOnly`: label records name the message without its labels. */
export function wireHistory(e: HistoryEntry, deltaOnly = false): Json {
  const ref = { id: e.message.id, threadId: e.message.threadId };
  const msg = { ...ref, labelIds: [...e.message.labelIds] };
  const rec: Json = { id: String(e.id), messages: [ref] };
  if (e.type === 'messageAdded') rec.messagesAdded = [{ message: msg }];
  if (e.type === 'messageDeleted') rec.messagesDeleted = [{ message: msg }];
  if (e.type === 'labelAdded') rec.labelsAdded = [{ message: deltaOnly ? ref : msg, labelIds: e.labelIds }];
  if (e.type === 'labelRemoved') rec.labelsRemoved = [{ message: deltaOnly ? ref : msg, labelIds: e.labelIds }];
  return rec;
}
