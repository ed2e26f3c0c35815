/**
 * In-memory mailbox model behind the Gmail stand-in (see gmail.stand-in.ts): each mailbox's
 * messages, labels, history log and watch, and the store that hands out ids and dates across
 * mailboxes. No I/O and no wire shapes here (message.wire.ts renders them).
 */
import { prng } from '../seeded-random.ts';
import { b64url, htmlToText, makeSnippet } from './message.wire.ts';
import type {
  ActiveWatch,
  HistoryEntry,
  HistoryType,
  NewMessage,
  RawMessageOptions,
  StandInMessage,
  WatchRecord,
} from './mailbox.types.ts';
import { convertRawMessage } from './raw-message.ts';

/** Gmail's system labels, answered by `labels.get` even when empty. */
const SYSTEM_LABELS = new Set([
  'INBOX',
  'SENT',
  'DRAFT',
  'SPAM',
  'TRASH',
  'UNREAD',
  'STARRED',
  'IMPORTANT',
  'CHAT',
  'CATEGORY_PERSONAL',
  'CATEGORY_SOCIAL',
  'CATEGORY_PROMOTIONS',
  'CATEGORY_UPDATES',
  'CATEGORY_FORUMS',
]);

const byNewest = (a: StandInMessage, b: StandInMessage): number =>
  b.internalDate - a.internalDate || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

export class Mailbox {
  readonly messages = new Map<string, StandInMessage>();
  /** The messages of each thread, in the order they were added (a thread's look-up must not scan a 100k-message mailbox). */
  private readonly threads = new Map<string, Set<StandInMessage>>();
  readonly history: HistoryEntry[] = [];
  readonly watchLog: WatchRecord[] = [];
  activeWatch: ActiveWatch | null = null;
  historyId: number;
  /** history.list with startHistoryId below this answers 404. */
  historyFloor: number;

  readonly email: string;
  private readonly store: MailStore;

  constructor(email: string, initialHistoryId: number, store: MailStore) {
    this.email = email;
    this.store = store;
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
    return [...(this.threads.get(threadId) ?? [])].sort((a, b) => -byNewest(a, b));
  }

  threadCount(): number {
    return new Set([...this.messages.values()].map((m) => m.threadId)).size;
  }

  /**
   * A label as `labels.get` answers it, with its counts (Gmail's shape; a thread counts as
   * unread when one of its messages in the label is); null for a label nobody uses that is
   * not one of the system labels.
   */
  labelCounts(labelId: string): {
    id: string;
    name: string;
    type: 'system' | 'user';
    messagesTotal: number;
    messagesUnread: number;
    threadsTotal: number;
    threadsUnread: number;
  } | null {
    const inLabel = [...this.messages.values()].filter((m) => m.labelIds.includes(labelId));
    const system = SYSTEM_LABELS.has(labelId);
    if (!system && inLabel.length === 0) return null;
    const unread = inLabel.filter((m) => m.labelIds.includes('UNREAD'));
    return {
      id: labelId,
      name: labelId,
      type: system ? 'system' : 'user',
      messagesTotal: inLabel.length,
      messagesUnread: unread.length,
      threadsTotal: new Set(inLabel.map((m) => m.threadId)).size,
      threadsUnread: new Set(unread.map((m) => m.threadId)).size,
    };
  }

  private record(type: HistoryType, m: StandInMessage, labelIds?: string[]): void {
    this.historyId += 1 + Math.floor(this.store.random() * 3); // Gmail history ids have gaps
    m.historyId = this.historyId;
    const entry: HistoryEntry = {
      id: this.historyId,
      type,
      message: { id: m.id, threadId: m.threadId, labelIds: [...m.labelIds] },
    };
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
      if (thread.length === 0)
        throw new Error(`gmail stand-in: no thread ${partial.threadId} in mailbox ${this.email}`);
    }
    const parent = thread[thread.length - 1];
    const labels = new Set(partial.labelIds ?? ['INBOX', 'UNREAD']);
    if (partial.read !== undefined) labels[partial.read ? 'delete' : 'add']('UNREAD');
    const hasBody = partial.bodyText !== undefined || partial.bodyHtml !== undefined;
    const bodyText = hasBody ? (partial.bodyText ?? undefined) : 'Hello,\n\nJust checking in.\n\nBest regards';
    const bodyHtml = partial.bodyHtml ?? undefined;
    const to =
      partial.to === undefined
        ? [{ name: this.ownerName, address: this.email }]
        : Array.isArray(partial.to)
          ? partial.to
          : [partial.to];
    const from = partial.from ?? { name: 'Bob Example', address: 'bob@example.com' };
    const m: StandInMessage = {
      id,
      threadId: partial.threadId ?? id,
      labelIds: [...labels],
      from,
      to,
      cc: partial.cc ?? [],
      subject:
        partial.subject ??
        (parent ? (/^re:/i.test(parent.subject) ? parent.subject : `Re: ${parent.subject}`) : 'Hello'),
      snippet: partial.snippet ?? makeSnippet(bodyText ?? (bodyHtml ? htmlToText(bodyHtml) : '')),
      internalDate,
      attachments: (partial.attachments ?? []).map((a, i) => ({
        ...a,
        attachmentId: `ANGjdJ${b64url(`${id}:${i}:${a.filename}`)}`,
      })),
      historyId: this.historyId,
      messageIdHeader: `<${id}.${internalDate.toString(36)}@${from.address.split('@')[1] ?? 'mail.example.com'}>`,
      references: parent ? [...parent.references, parent.messageIdHeader] : [],
    };
    if (bodyText !== undefined) m.bodyText = bodyText;
    if (bodyHtml !== undefined) m.bodyHtml = bodyHtml;
    if (parent) m.inReplyTo = parent.messageIdHeader;
    if (partial.headers?.length) m.extraHeaders = partial.headers.map((h) => ({ ...h }));
    return this.insert(m);
  }

  /**
   * A message from raw RFC 822 bytes, served as raw-message.ts converts it. Its date is
   * `opts.internalDate`, else the Date header's, else now; it joins the thread of a message
   * it names in In-Reply-To/References (or `opts.threadId`), else starts its own.
   */
  addRaw(raw: Buffer | string, opts: RawMessageOptions = {}): StandInMessage {
    let internalDate = 0;
    let id = '';
    const c = convertRawMessage(raw, (date) => {
      internalDate = this.store.nextInternalDate(opts.internalDate ?? date);
      return (id = this.store.newId(internalDate));
    });
    if (opts.threadId !== undefined && this.threadMessages(opts.threadId).length === 0)
      throw new Error(`gmail stand-in: no thread ${opts.threadId} in mailbox ${this.email}`);
    const named = [c.inReplyTo, ...c.references].filter((x) => x !== undefined);
    const parent = named.length
      ? [...this.messages.values()].find((x) => x.messageIdHeader && named.includes(x.messageIdHeader))
      : undefined;
    const m: StandInMessage = {
      id,
      threadId: opts.threadId ?? parent?.threadId ?? id,
      labelIds: [...new Set(opts.labelIds ?? ['INBOX', 'UNREAD'])],
      from: c.from,
      to: c.to,
      cc: c.cc,
      subject: c.subject,
      snippet: c.snippet,
      internalDate,
      attachments: c.attachments,
      historyId: this.historyId,
      messageIdHeader: c.messageIdHeader,
      references: c.references,
      raw: c.raw,
    };
    if (c.text !== undefined) m.bodyText = c.text;
    if (c.inReplyTo !== undefined) m.inReplyTo = c.inReplyTo;
    return this.insert(m);
  }

  private insert(m: StandInMessage): StandInMessage {
    this.messages.set(m.id, m);
    this.threads.set(m.threadId, (this.threads.get(m.threadId) ?? new Set()).add(m));
    this.store.claimId(m.id);
    this.record('messageAdded', m);
    return m;
  }

  delete(id: string): void {
    const m = this.get(id);
    this.messages.delete(id);
    const thread = this.threads.get(m.threadId);
    thread?.delete(m);
    if (!thread?.size) this.threads.delete(m.threadId);
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

  readonly seed: number;
  readonly notify: (mb: Mailbox, entry: HistoryEntry) => void;

  constructor(seed: number, notify: (mb: Mailbox, entry: HistoryEntry) => void) {
    this.seed = seed;
    this.notify = notify;
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
