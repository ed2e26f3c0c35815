/**
 * In-memory mailbox model behind the Gmail stand-in (see gmail.stand-in.ts).
 *
 * Holds messages, labels and the per-mailbox history log, renders messages in
 * the Gmail REST v1 wire shapes (minimal / metadata / full MIME tree) and
 * generates realistic seeded mailboxes. No I/O here.
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

// ---------------------------------------------------------------- utilities

/** mulberry32 — small deterministic PRNG returning floats in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const b64url = (s: string | Buffer): string =>
  (typeof s === 'string' ? Buffer.from(s, 'utf8') : s).toString('base64url');

const escapeHtml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

const decodeEntities = (s: string): string =>
  s.replace(/&nbsp;/g, ' ').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');

export function htmlToText(html: string): string {
  return decodeEntities(html.replace(/<(style|script)[^>]*>[\s\S]*?<\/\1>/gi, ' ').replace(/<br\s*\/?>|<\/p>/gi, '\n').replace(/<[^>]+>/g, ' '));
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

const byNewest = (a: StandInMessage, b: StandInMessage): number =>
  b.internalDate - a.internalDate || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

// ---------------------------------------------------------------- mailbox

export class Mailbox {
  readonly messages = new Map<string, StandInMessage>();
  readonly history: HistoryEntry[] = [];
  readonly watchLog: WatchRecord[] = [];
  activeWatch: ActiveWatch | null = null;
  historyId: number;
  /** history.list with startHistoryId below this answers 404. */
  historyFloor: number;

  constructor(
    readonly email: string,
    initialHistoryId: number,
    private readonly store: MailStore,
  ) {
    this.historyId = initialHistoryId;
    this.historyFloor = initialHistoryId;
  }

  get ownerName(): string {
    const local = this.email.split('@')[0] ?? this.email;
    return local.charAt(0).toUpperCase() + local.slice(1);
  }

  get(id: string): StandInMessage {
    const m = this.messages.get(id);
    if (!m) throw new Error(`gmail stand-in: no message ${id} in mailbox ${this.email}`);
    return m;
  }

  /** Messages, newest first (internalDate desc, id desc). */
  sorted(): StandInMessage[] {
    return [...this.messages.values()].sort(byNewest);
  }

  threadMessages(threadId: string): StandInMessage[] {
    return [...this.messages.values()].filter((m) => m.threadId === threadId).sort((a, b) => -byNewest(a, b));
  }

  threadCount(): number {
    return new Set([...this.messages.values()].map((m) => m.threadId)).size;
  }

  private record(type: HistoryType, m: StandInMessage, labelIds?: string[]): void {
    this.historyId += 1 + Math.floor(this.store.random() * 3); // Gmail history ids have gaps
    m.historyId = this.historyId;
    const entry: HistoryEntry = { id: this.historyId, type, message: { id: m.id, threadId: m.threadId, labelIds: [...m.labelIds] } };
    if (labelIds) entry.labelIds = [...labelIds];
    this.history.push(entry);
    this.store.notify(this, entry);
  }

  add(partial: NewMessage = {}): StandInMessage {
    const internalDate = this.store.nextInternalDate(partial.internalDate);
    const id = partial.id ?? this.store.newId(internalDate);
    if (this.store.idTaken(id)) throw new Error(`gmail stand-in: message id ${id} already exists`);
    let thread: StandInMessage[] = [];
    if (partial.threadId !== undefined) {
      thread = this.threadMessages(partial.threadId);
      if (thread.length === 0) throw new Error(`gmail stand-in: no thread ${partial.threadId} in mailbox ${this.email}`);
    }
    const parent = thread[thread.length - 1];
    const labels = new Set(partial.labelIds ?? ['INBOX', 'UNREAD']);
    if (partial.read === true) labels.delete('UNREAD');
    if (partial.read === false) labels.add('UNREAD');
    const hasBody = partial.bodyText !== undefined || partial.bodyHtml !== undefined;
    const bodyText = hasBody ? (partial.bodyText ?? undefined) : 'Hello,\n\nJust checking in.\n\nBest regards';
    const bodyHtml = partial.bodyHtml ?? undefined;
    const to = partial.to === undefined ? [{ name: this.ownerName, address: this.email }] : Array.isArray(partial.to) ? partial.to : [partial.to];
    const from = partial.from ?? { name: 'Bob Example', address: 'bob@example.com' };
    const m: StandInMessage = {
      id,
      threadId: partial.threadId ?? id,
      labelIds: [...labels],
      from,
      to,
      cc: partial.cc ?? [],
      subject: partial.subject ?? (parent ? (/^re:/i.test(parent.subject) ? parent.subject : `Re: ${parent.subject}`) : 'Hello'),
      snippet: partial.snippet ?? makeSnippet(bodyText ?? (bodyHtml ? htmlToText(bodyHtml) : '')),
      internalDate,
      attachments: (partial.attachments ?? []).map((a, i) => ({ ...a, attachmentId: `ANGjdJ${b64url(`${id}:${i}:${a.filename}`)}` })),
      historyId: this.historyId,
      messageIdHeader: `<${id}.${internalDate.toString(36)}@${from.address.split('@')[1] ?? 'mail.example.com'}>`,
      references: parent ? [...parent.references, parent.messageIdHeader] : [],
    };
    if (bodyText !== undefined) m.bodyText = bodyText;
    if (bodyHtml !== undefined) m.bodyHtml = bodyHtml;
    if (parent) m.inReplyTo = parent.messageIdHeader;
    this.messages.set(id, m);
    this.store.claimId(id);
    this.record('messageAdded', m);
    return m;
  }

  delete(id: string): void {
    const m = this.get(id);
    this.messages.delete(id);
    this.record('messageDeleted', m);
  }

  /** Applies label changes; records one history entry per kind of change (none when nothing changes). */
  modify(id: string, add: string[] = [], remove: string[] = []): StandInMessage {
    const m = this.get(id);
    const removed = remove.filter((l) => m.labelIds.includes(l) && !add.includes(l));
    if (removed.length) {
      m.labelIds = m.labelIds.filter((l) => !removed.includes(l));
      this.record('labelRemoved', m, removed);
    }
    const added = [...new Set(add)].filter((l) => !m.labelIds.includes(l));
    if (added.length) {
      m.labelIds = [...m.labelIds, ...added];
      this.record('labelAdded', m, added);
    }
    return m;
  }
}

// ---------------------------------------------------------------- store

export class MailStore {
  readonly mailboxes = new Map<string, Mailbox>();
  private readonly ids = new Set<string>();
  private seq = 0;
  private lastInternalDate = 0;
  readonly random: () => number;

  constructor(
    readonly seed: number,
    readonly notify: (mb: Mailbox, entry: HistoryEntry) => void,
  ) {
    this.random = prng(seed);
  }

  mailbox(email: string): Mailbox {
    const key = email.toLowerCase();
    let mb = this.mailboxes.get(key);
    if (!mb) {
      mb = new Mailbox(key, 1000 + this.mailboxes.size * 100_000 + Math.floor(this.random() * 9000), this);
      this.mailboxes.set(key, mb);
    }
    return mb;
  }

  nextInternalDate(given?: number): number {
    const d = given ?? Math.max(Date.now(), this.lastInternalDate + 1);
    this.lastInternalDate = Math.max(this.lastInternalDate, d);
    return d;
  }

  /** Gmail-like hex id: internalDate in the high bits, a sequence number in the low 20 bits. */
  newId(internalDate: number): string {
    for (;;) {
      const id = ((BigInt(internalDate) << 20n) | BigInt(this.seq++ & 0xfffff)).toString(16);
      if (!this.ids.has(id)) return id;
    }
  }

  idTaken(id: string): boolean {
    return this.ids.has(id);
  }

  claimId(id: string): void {
    this.ids.add(id);
  }
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
  h.push({ name: 'Content-Type', value: rootContentType });
  return h;
}

interface Part {
  partId: string;
  mimeType: string;
  filename: string;
  headers: { name: string; value: string }[];
  body: { size: number; data?: string; attachmentId?: string };
  parts?: Part[];
}

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
  const renumber = (p: Part, id: string): Part => ({ ...p, partId: id, ...(p.parts ? { parts: p.parts.map((c, i) => renumber(c, `${id}.${i}`)) } : {}) });
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
  const headerBytes = messageHeaders(m, 'multipart/alternative').reduce((n, h) => n + h.name.length + h.value.length + 4, 0);
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
    sizeEstimate: sizeEstimate(m),
    historyId: String(m.historyId),
    internalDate: String(m.internalDate),
  };
  if (format === 'minimal') return out;
  const tree = mimeTree(m);
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

export function wireHistory(e: HistoryEntry): Json {
  const ref = { id: e.message.id, threadId: e.message.threadId };
  const msg = { ...ref, labelIds: [...e.message.labelIds] };
  const rec: Json = { id: String(e.id), messages: [ref] };
  if (e.type === 'messageAdded') rec.messagesAdded = [{ message: msg }];
  if (e.type === 'messageDeleted') rec.messagesDeleted = [{ message: msg }];
  if (e.type === 'labelAdded') rec.labelsAdded = [{ message: msg, labelIds: e.labelIds }];
  if (e.type === 'labelRemoved') rec.labelsRemoved = [{ message: msg, labelIds: e.labelIds }];
  return rec;
}

// ---------------------------------------------------------------- search (subset of Gmail's q syntax)

const UNIT_MS: Record<string, number> = { h: 3_600_000, d: 86_400_000, m: 30 * 86_400_000, y: 365 * 86_400_000 };

function parseDateTerm(v: string): number | null {
  if (/^\d{9,}$/.test(v)) return Number(v) * 1000;
  const m = /^(\d{4})[/-](\d{1,2})[/-](\d{1,2})$/.exec(v);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : null;
}

/**
 * Supported: in:inbox|sent|spam|trash|anywhere, is:unread|read|starred|important, label:X,
 * newer_than:/older_than:<n>[hdmy], after:/before:<yyyy/mm/dd|epoch s>, has:attachment,
 * from:, to:, subject:, bare words (case-insensitive substring of subject/from/body).
 * Unknown `key:value` terms are ignored. Returns the predicate and whether spam/trash is searched.
 */
export function compileQuery(q: string, now = Date.now()): { match: (m: StandInMessage) => boolean; anywhere: boolean } {
  const preds: ((m: StandInMessage) => boolean)[] = [];
  let anywhere = false;
  const has = (l: string) => (m: StandInMessage) => m.labelIds.includes(l);
  const addrText = (as: Address[]) => as.map((a) => `${a.name} ${a.address}`.toLowerCase()).join(' ');
  for (const raw of q.match(/(?:[^\s"]+|"[^"]*")+/g) ?? []) {
    const term = raw.replace(/"/g, '');
    const idx = term.indexOf(':');
    const key = idx > 0 ? term.slice(0, idx).toLowerCase() : '';
    const val = (idx > 0 ? term.slice(idx + 1) : term).toLowerCase();
    if (key === 'in' || key === 'label') {
      if (val === 'anywhere') anywhere = true;
      else {
        const label = key === 'in' || /^(inbox|sent|spam|trash|unread|starred|important)$/.test(val) ? val.toUpperCase() : term.slice(idx + 1);
        if (label === 'SPAM' || label === 'TRASH') anywhere = true;
        preds.push(has(label));
      }
    } else if (key === 'is') {
      if (val === 'read') preds.push((m) => !m.labelIds.includes('UNREAD'));
      else preds.push(has(val.toUpperCase()));
    } else if (key === 'newer_than' || key === 'older_than') {
      const m = /^(\d+)([hdmy])$/.exec(val);
      if (!m) continue;
      const edge = now - Number(m[1]) * UNIT_MS[m[2]!]!;
      preds.push(key === 'newer_than' ? (x) => x.internalDate > edge : (x) => x.internalDate < edge);
    } else if (key === 'after' || key === 'before') {
      const t = parseDateTerm(val);
      if (t === null) continue;
      preds.push(key === 'after' ? (x) => x.internalDate >= t : (x) => x.internalDate < t);
    } else if (key === 'has') {
      if (val === 'attachment') preds.push((m) => m.attachments.length > 0);
    } else if (key === 'from') {
      preds.push((m) => addrText([m.from]).includes(val));
    } else if (key === 'to') {
      preds.push((m) => addrText([...m.to, ...m.cc]).includes(val));
    } else if (key === 'subject') {
      preds.push((m) => m.subject.toLowerCase().includes(val));
    } else if (key === '') {
      preds.push((m) => `${m.subject} ${addrText([m.from])} ${m.bodyText ?? ''} ${m.bodyHtml ? htmlToText(m.bodyHtml) : ''}`.toLowerCase().includes(val));
    }
  }
  return { match: (m) => preds.every((p) => p(m)), anywhere };
}

// ---------------------------------------------------------------- seeded mailbox generator

const PEOPLE: [string, string][] = [
  ['Priya Raman', 'northwind.io'], ['Marcus Feld', 'contoso.com'], ['Sofia Alvarez', 'fabrikam.net'], ['Kenji Watanabe', 'tailspin.dev'],
  ['Amara Okafor', 'wingtip.co'], ['Lukas Brandt', 'adatum.de'], ["Liam O'Connor", 'litware.ie'], ['Chloé Martin', 'proseware.fr'],
  ['Noah Goldberg', 'fourthcoffee.com'], ['Mei Chen', 'woodgrove.bank'], ['Ravi Patel', 'northwind.io'], ['Hannah Schmidt', 'contoso.com'],
];
const ROBOTS: [string, string, string][] = [
  ['GitHub', 'notifications@github.com', 'CATEGORY_UPDATES'], ['Acme Billing', 'billing@acme-cloud.com', 'CATEGORY_UPDATES'],
  ['Calendar', 'calendar-notification@google.com', 'CATEGORY_UPDATES'], ['The Weekly Byte', 'newsletter@weeklybyte.news', 'CATEGORY_PROMOTIONS'],
  ['Skyway Airlines', 'no-reply@skyway.example', 'CATEGORY_UPDATES'], ['Bookshop Deals', 'deals@bookshop.example', 'CATEGORY_PROMOTIONS'],
];
const PERSON_SUBJECTS = [
  'Q{n} budget review', 'Offsite planning', 'Design review: onboarding flow', 'Lunch on Thursday?', 'Contract renewal for {org}',
  'Candidate feedback', 'Can you review the proposal?', 'Quick question about the API migration', 'Slides for Monday', 'Intro: {name} <> you',
  'Follow-up from our call', 'Hiring plan draft', 'Vendor quotes', 'Re-org FAQ — please read', 'Travel to Lisbon',
];
const ROBOT_SUBJECTS = [
  '[repo/{org}] Pull request #{n} merged', 'Your invoice #{n} is available', 'Invitation: Sync @ Tue 10:00', 'This week: {n} things worth reading',
  'Your flight confirmation {code}', '20% off this weekend only', 'Security alert: new sign-in', 'Reminder: payment due in 3 days',
];
const SENTENCES = [
  "I've attached the latest numbers so you can take a look before the meeting.", "Let's aim to wrap this up by end of week.",
  'Could you confirm whether the timeline still works for your team?', "We're still waiting on legal, but I don't expect surprises.",
  'The draft is in the shared folder; comments welcome.', 'Happy to jump on a call if that is easier.',
  'Thanks again for pulling this together so quickly.', 'One open question is whether we need sign-off from finance & ops.',
  'I moved the review to Thursday at 2pm because of the holiday.', 'Please reply with any changes by tomorrow morning.',
  'The vendor came back with a revised quote that is 12% lower.', 'Let me know if anything looks off — numbers are < 5% apart from last quarter.',
  'We shipped the fix last night and error rates are back to normal.', "I'm out next week, so Sam will cover for me.",
];
const ATTACHMENTS: [string, string, number, number][] = [
  ['invoice.pdf', 'application/pdf', 20_000, 400_000], ['photo.jpg', 'image/jpeg', 80_000, 2_500_000], ['notes.txt', 'text/plain', 300, 8_000],
  ['report.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 10_000, 900_000],
  ['slides.pdf', 'application/pdf', 150_000, 3_000_000], ['calendar.ics', 'text/calendar', 800, 3_000],
];

function hashString(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

interface Plan {
  thread: number;
  at: number;
  sent: boolean;
  from: Address;
  to: Address;
  subject?: string;
  labels: string[];
  read: boolean;
  robot: boolean;
}

/**
 * Fills `mb` with `count` received messages (plus optional SENT replies) in
 * threads, added in chronological order so history and ids look natural.
 * Deterministic for a given seed, email, `now` and count.
 */
export function seedMailbox(mb: Mailbox, store: MailStore, count: number, opts: SeedOptions = {}): StandInMessage[] {
  const rnd = prng((opts.seed ?? store.seed) ^ hashString(mb.email));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const now = opts.now ?? Date.now();
  const span = (opts.spanDays ?? 21) * 86_400_000;
  const readRatio = opts.readRatio ?? 0.4;
  const owner: Address = { name: mb.ownerName, address: mb.email };
  const fill = (t: string, name: string, org: string) =>
    t.replace('{n}', String(int(2, 9999))).replace('{org}', org).replace('{name}', name).replace('{code}', Math.floor(rnd() * 36 ** 6).toString(36).toUpperCase());

  const plans: Plan[] = [];
  let remaining = count;
  for (let thread = 0; remaining > 0; thread++) {
    const robot = rnd() < 0.35;
    const r = rnd();
    const size = robot ? 1 : Math.min(remaining, r < 0.65 ? 1 : r < 0.83 ? 2 : r < 0.95 ? 3 : 4);
    remaining -= size;
    let correspondent: Address;
    let labels: string[];
    let subject: string;
    if (robot) {
      const [name, address, category] = pick(ROBOTS);
      correspondent = { name, address };
      labels = [category];
      subject = fill(pick(ROBOT_SUBJECTS), name, address.split('@')[1]!.split('.')[0]!);
    } else {
      const [name, domain] = pick(PEOPLE);
      correspondent = { name, address: `${name.split(' ')[0]!.toLowerCase().normalize('NFD').replace(/[^a-z]/g, '')}@${domain}` };
      labels = rnd() < 0.3 ? ['CATEGORY_PERSONAL', 'IMPORTANT'] : ['CATEGORY_PERSONAL'];
      subject = fill(pick(PERSON_SUBJECTS), pick(PEOPLE)[0], domain.split('.')[0]!);
    }
    if (!(rnd() < (opts.archivedRatio ?? 0))) labels.push('INBOX');
    let at = now - span + rnd() * Math.max(span - 7_200_000, 1);
    for (let i = 0; i < size; i++) {
      if (i > 0) at += 600_000 + rnd() * 1.5 * 86_400_000;
      const last = i === size - 1;
      const reply = !last && opts.sentReplies !== false && rnd() < 0.5;
      const read = reply || (last ? rnd() < readRatio : rnd() < 0.85);
      plans.push({ thread, at, sent: false, from: correspondent, to: owner, subject: i === 0 ? subject : undefined, labels, read, robot });
      if (reply) {
        at += 300_000 + rnd() * 6 * 3_600_000;
        plans.push({ thread, at, sent: true, from: owner, to: correspondent, labels: ['SENT'], read: true, robot });
      }
    }
  }
  plans.sort((a, b) => a.at - b.at);
  let prev = -Infinity;
  for (const p of plans) {
    p.at = Math.round(Math.min(p.at, now - 60_000));
    if (p.at <= prev) p.at = prev + 1;
    prev = p.at;
  }

  const threadIds = new Map<number, string>();
  const created: StandInMessage[] = [];
  for (const p of plans) {
    const paragraphs = Array.from({ length: int(1, 3) }, () => Array.from({ length: int(1, 3) }, () => pick(SENTENCES)).join(' '));
    const greeting = `Hi ${p.to.name.split(' ')[0]},`;
    const signoff = p.robot ? '— The team' : `Best,\n${p.from.name.split(' ')[0]}`;
    const text = [greeting, ...paragraphs, signoff].join('\n\n');
    const html = `<div dir="ltr"><p>${escapeHtml(greeting)}</p>${paragraphs.map((x) => `<p>${escapeHtml(x)}</p>`).join('')}<p>${escapeHtml(signoff).replace('\n', '<br>')}</p></div>`;
    const kind = rnd();
    const both = p.robot ? kind < 0.6 : kind < 0.7;
    const htmlOnly = !both && (p.robot || kind > 0.9);
    const attachments: AttachmentSpec[] = [];
    if (!p.sent && rnd() < 0.15) {
      for (let i = int(1, 2); i > 0; i--) {
        const [filename, mimeType, lo, hi] = pick(ATTACHMENTS);
        attachments.push({ filename, mimeType, size: int(lo, hi) });
      }
    }
    const threadId = threadIds.get(p.thread);
    const m = mb.add({
      ...(threadId ? { threadId } : {}),
      ...(p.subject !== undefined ? { subject: p.subject } : {}),
      labelIds: [...p.labels],
      read: p.read,
      from: p.from,
      to: p.to,
      ...(!p.robot && rnd() < 0.15 ? { cc: [{ name: pick(PEOPLE)[0], address: `team@${p.from.address.split('@')[1]}` }] } : {}),
      internalDate: p.at,
      bodyText: htmlOnly ? null : text,
      bodyHtml: both || htmlOnly ? html : null,
      attachments,
    });
    if (threadId === undefined) threadIds.set(p.thread, m.id);
    created.push(m);
  }
  return created;
}
