/**
 * A raw RFC 822 message turned into what Gmail serves for it (addRawMessage):
 *
 * - Line ends become CRLF first (Gmail keeps mail in SMTP's canonical form); `sizeEstimate`
 *   is the byte length after that.
 * - Headers: every field, in order, name as sent; the value unfolded (the CRLF before a
 *   continuation line goes, its leading blank stays), leading/trailing blanks trimmed, NOT
 *   decoded (RFC 2047 words stay encoded). 8-bit bytes: read as UTF-8 when the value is valid
 *   UTF-8 (RFC 6532), else byte for byte as Latin-1 (no byte lost, no U+FFFD made up).
 *   A leading mbox `From ` line is no header; the header block ends at the first empty line
 *   or at the first line that is neither a field nor a continuation.
 * - MIME tree: `partId` '' for the root, `0`, `1`, `1.0`, ... below; `mimeType` lower-cased
 *   (text/plain when missing or malformed; message/rfc822 inside multipart/digest);
 *   `filename` from Content-Disposition filename or Content-Type name (RFC 2231 and 2047
 *   decoded, as Gmail shows it). Multipart bodies are split on their boundary leniently: a
 *   missing close delimiter ends the last part at the end of the message; a multipart with
 *   nothing to split (no boundary, or never found) is served as one text/plain leaf.
 * - Leaves: `body.data` is base64url of the transfer-decoded bytes (quoted-printable and
 *   base64 undone, any other encoding as is) in the part's own charset (never converted),
 *   `body.size` their length; no `data` when empty. Parts with a filename or an `attachment`
 *   disposition, and message/rfc822 parts (whose own tree is then in `parts`), carry
 *   `body.attachmentId` instead, their bytes kept for attachments.get.
 * - `snippet`: the start of the first text/plain leaf (else the tag-stripped first
 *   text/html leaf), decoded in its charset (windows-1252 when unknown), blanks collapsed.
 * - `date`: the Date header when Date.parse reads it as a time from 1970 on, else undefined.
 *
 * Never throws: broken mail is served with whatever could be split.
 */
import libmime from 'libmime';
import libqp from 'libqp';
import { addressParser } from 'postal-mime';
import { htmlToText, makeSnippet } from './message.wire.ts';
import type { Address, RawPayload, StandInAttachment, WireHeader, WirePart } from './mailbox.types.ts';

const CRLF = '\r\n';
const MAX_DEPTH = 32;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface ConvertedMessage {
  raw: RawPayload;
  headers: WireHeader[];
  date: number | undefined;
  snippet: string;
  /** The first text leaf as text (for search), or undefined. */
  text: string | undefined;
  attachments: StandInAttachment[];
  /** Decoded convenience fields for the control API and search (the wire keeps the raw headers). */
  from: Address;
  to: Address[];
  cc: Address[];
  subject: string;
  messageIdHeader: string;
  inReplyTo: string | undefined;
  references: string[];
}

interface Entity {
  headers: WireHeader[];
  body: string;
}

interface Ctx {
  id: string;
  attachmentData: Record<string, string>;
  attachments: StandInAttachment[];
  texts: { html: boolean; charset: string; bytes: Buffer }[];
}

/** Latin-1 "binary" string: one char per byte. */
const binary = (raw: Buffer | string): string =>
  (typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw).toString('latin1');
/** Bare LF line ends as CRLF. */
const canonical = (raw: Buffer | string): string => binary(raw).replace(/\r?\n/g, CRLF);

const headerText = (bin: string): string =>
  /[\x80-\xff]/.test(bin) ? attempt(() => utf8.decode(Buffer.from(bin, 'latin1')), bin) : bin;

export function headerOf(headers: WireHeader[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find((h) => h.name.toLowerCase() === lower)?.value;
}

/** Splits an entity (CRLF line ends, binary string) into its header fields and its body. */
export function splitEntity(bin: string): Entity {
  const fields: string[] = [];
  let pos = 0;
  if (bin.startsWith('From ')) pos = bin.includes(CRLF) ? bin.indexOf(CRLF) + 2 : bin.length;
  while (pos < bin.length) {
    const nl = bin.indexOf(CRLF, pos);
    const end = nl < 0 ? bin.length : nl;
    const line = bin.slice(pos, end);
    if (line === '') {
      pos = end + 2;
      break;
    }
    if (/^[ \t]/.test(line) && fields.length) fields[fields.length - 1] += line;
    else if (/^[!-9;-~]+[ \t]*:/.test(line)) fields.push(line);
    else break; // not a header: the body starts here
    pos = end + 2;
  }
  const headers = fields.map((f) => {
    const colon = f.indexOf(':');
    return { name: f.slice(0, colon).trim(), value: headerText(f.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '')) };
  });
  return { headers, body: bin.slice(Math.min(pos, bin.length)) };
}

function parseValue(value: string | undefined): { value: string; params: Record<string, string> } {
  try {
    const parsed = libmime.parseHeaderValue(value ?? '');
    return { value: String(parsed.value ?? ''), params: (parsed.params ?? {}) as Record<string, string> };
  } catch {
    return { value: '', params: {} };
  }
}

const decodeWordsSafe = (s: string): string => attempt(() => libmime.decodeWords(s), s);

function attempt<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

/** The body parts between the boundary's delimiter lines (RFC 2046 5.1.1), leniently. */
export function splitMultipart(body: string, boundary: string | undefined): string[] {
  if (!boundary) return [];
  const delimiter = `--${boundary}`;
  const out: string[] = [];
  let current: string[] | null = null;
  for (const line of body.split(CRLF)) {
    if (line.startsWith(delimiter)) {
      const rest = line.slice(delimiter.length);
      if (/^--[ \t]*$/.test(rest)) {
        if (current) out.push(current.join(CRLF));
        return out; // the epilogue is not a part
      }
      if (/^[ \t]*$/.test(rest)) {
        if (current) out.push(current.join(CRLF));
        current = [];
        continue;
      }
    }
    current?.push(line);
  }
  if (current) out.push(current.join(CRLF));
  return out;
}

function transferDecode(body: string, encoding: string): Buffer {
  const bytes = Buffer.from(body, 'latin1');
  if (encoding === 'quoted-printable') return libqp.decode(bytes);
  if (encoding === 'base64') return Buffer.from(body.replace(/[^A-Za-z0-9+/]/g, ''), 'base64');
  return bytes;
}

const childId = (partId: string, i: number) => (partId === '' ? String(i) : `${partId}.${i}`);

function toPart(entity: Entity, partId: string, depth: number, defaultType: string, ctx: Ctx): WirePart {
  const { headers, body } = entity;
  const type = parseValue(headerOf(headers, 'Content-Type'));
  const value = type.value.trim().toLowerCase();
  let mimeType = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(value) ? value : defaultType;
  const disposition = parseValue(headerOf(headers, 'Content-Disposition'));
  const filename = decodeWordsSafe(disposition.params.filename ?? type.params.name ?? '');
  const part: WirePart = { partId, mimeType, filename, headers, body: { size: 0 } };
  if (mimeType.startsWith('multipart/')) {
    const children = depth < MAX_DEPTH ? splitMultipart(body, type.params.boundary) : [];
    if (children.length) {
      const childType = mimeType === 'multipart/digest' ? 'message/rfc822' : 'text/plain';
      part.parts = children.map((c, i) => toPart(splitEntity(c), childId(partId, i), depth + 1, childType, ctx));
      return part;
    }
    part.mimeType = mimeType = 'text/plain';
  }
  const bytes = transferDecode(body, (headerOf(headers, 'Content-Transfer-Encoding') ?? '').trim().toLowerCase());
  part.body.size = bytes.length;
  const inner = mimeType === 'message/rfc822';
  if (filename !== '' || /^attachment$/i.test(disposition.value.trim()) || inner) {
    const attachmentId = `ANGjdJ${Buffer.from(`${ctx.id}:${partId}`).toString('base64url')}`;
    part.body.attachmentId = attachmentId;
    ctx.attachmentData[attachmentId] = bytes.toString('base64url');
    ctx.attachments.push({ attachmentId, filename, mimeType, size: bytes.length });
    if (inner && depth < MAX_DEPTH)
      part.parts = [toPart(splitEntity(canonical(bytes)), childId(partId, 0), depth + 1, 'text/plain', ctx)];
    return part;
  }
  if (bytes.length) part.body.data = bytes.toString('base64url');
  if (mimeType === 'text/plain' || mimeType === 'text/html')
    ctx.texts.push({ html: mimeType === 'text/html', charset: type.params.charset ?? '', bytes });
  return part;
}

const decodeText = (bytes: Buffer, charset: string): string =>
  attempt(
    () => new TextDecoder(charset.trim() || 'us-ascii').decode(bytes),
    new TextDecoder('windows-1252').decode(bytes),
  );

const addresses = (value: string | undefined): Address[] =>
  attempt(
    () => addressParser(value ?? '', { flatten: true }).map((a) => ({ name: a.name ?? '', address: a.address ?? '' })),
    [],
  );

const ids = (value: string | undefined): string[] => value?.match(/<[^<>\s]+>/g) ?? [];

/** The message's Date header as epoch ms, when readable and not before 1970. */
export function headerDate(headers: WireHeader[]): number | undefined {
  const t = Date.parse(headerOf(headers, 'Date') ?? '');
  return Number.isFinite(t) && t >= 0 ? t : undefined;
}

/**
 * Converts raw RFC 822 bytes (a string is taken as its UTF-8 bytes). `makeId` is told the
 * Date header's time (or undefined) and returns the message id the attachmentIds are minted for.
 */
export function convertRawMessage(
  raw: Buffer | string,
  makeId: (date: number | undefined) => string,
): ConvertedMessage {
  const bin = canonical(raw);
  const root = splitEntity(bin);
  const date = headerDate(root.headers);
  const ctx: Ctx = { id: makeId(date), attachmentData: {}, attachments: [], texts: [] };
  let payload: WirePart;
  try {
    payload = toPart(root, '', 0, 'text/plain', ctx);
  } catch {
    // A last resort that never should be needed: the whole body as one text leaf.
    const data = Buffer.from(root.body, 'latin1');
    payload = {
      partId: '',
      mimeType: 'text/plain',
      filename: '',
      headers: root.headers,
      body: { size: data.length, data: data.toString('base64url') },
    };
  }
  const first = ctx.texts.find((t) => !t.html) ?? ctx.texts[0];
  const text = first && decodeText(first.bytes, first.charset);
  const h = (name: string) => headerOf(root.headers, name);
  const inReplyTo = ids(h('In-Reply-To'))[0];
  return {
    raw: { payload, sizeEstimate: Buffer.byteLength(bin, 'latin1'), attachmentData: ctx.attachmentData },
    headers: root.headers,
    date,
    snippet: text === undefined ? '' : makeSnippet(first!.html ? htmlToText(text) : text),
    text: text === undefined ? undefined : first!.html ? htmlToText(text) : text,
    attachments: ctx.attachments,
    from: addresses(h('From'))[0] ?? { name: '', address: '' },
    to: addresses(h('To')),
    cc: addresses(h('Cc')),
    subject: decodeWordsSafe(h('Subject') ?? ''),
    messageIdHeader: ids(h('Message-ID'))[0] ?? '',
    inReplyTo,
    references: ids(h('References')),
  };
}
