/**
 * What one bounded sync call reads from the provider and decides to write, before anything
 * is written: the history since the stored checkpoint (an inbox listing, for the first sync
 * or a resync after the checkpoint expired, is planned in listing-plan.ts). Nothing here
 * writes; the caller commits the plan's changes and its new checkpoint in one transaction.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { GmailApi, HistoryRecord } from '../../../providers/gmail.ts';
import { noChanges, uniq, type StoreChanges } from '../mail-store.ts';
import type { AppError } from '../../errors.ts';
import { fetchMeta } from './message-fetch.ts';

export interface SyncPlan {
  mode: 'listing' | 'history';
  changes: StoreChanges;
  next: {
    historyId: string | null;
    cursor: string | null;
    fullSyncActive: boolean;
    mailboxAddress?: string;
    inboxEstimate?: number | null;
  };
  messagesSynced: number;
  hasMore: boolean;
  /** The quota ran out part-way: the changes hold what was fetched; the caller commits them, then answers this. */
  quota?: AppError;
}

export interface PlanContext {
  api: GmailApi;
  /** Moves the client's calls to a quota lane: `live` for history reads, `bulk` for a listing's pages and fetches (sync.service.ts). */
  use?: (phase: 'live' | 'bulk') => void;
  em: EntityManager;
  accountId: string;
  /** Most messages fetched (messages.get) in this call. */
  budget: number;
}

export interface KnownRows {
  /** provider message id -> stored labels */
  messages: Map<string, string[]>;
  threads: Set<string>;
}

export async function lookupKnown(
  em: EntityManager,
  accountId: string,
  messageIds: string[],
  threadIds: string[],
): Promise<KnownRows> {
  const known: KnownRows = { messages: new Map(), threads: new Set() };
  if (!messageIds.length && !threadIds.length) return known;
  const rows = await em.execute<{ kind: string; pid: string; labels: string[] | null }[]>(
    `select 'm' as kind, provider_message_id as pid, label_ids as labels from mail_messages
       where account_id = ? and provider_message_id = any(array[?]::text[])
     union all
     select 't', provider_thread_id, null from mail_threads where account_id = ? and provider_thread_id = any(array[?]::text[])`,
    [accountId, uniq(messageIds), accountId, uniq(threadIds)],
  );
  for (const r of rows) {
    if (r.kind === 'm') known.messages.set(r.pid, r.labels ?? []);
    else known.threads.add(r.pid);
  }
  return known;
}

const sameLabels = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((l) => b.includes(l));

interface Track {
  threadId: string;
  /** Current labels as far as known (stored labels, then history snapshots or deltas); null when unknown. */
  labels: string[] | null;
  stored: boolean;
  added: boolean;
  deleted: boolean;
  /** The last INBOX-related event put the message into the inbox. */
  inboxHint: boolean;
}

type Ref = HistoryRecord['messagesAdded'][number]['message'];

/**
 * History since the checkpoint, folded per message; stops at a record boundary once the fetch
 * budget is reached. `newOnly` (the live cursor of a listing under way): new messages and
 * deletions only; the stored labels may be older than the history, so label changes wait.
 */
export async function planHistory(
  p: PlanContext,
  startHistoryId: string,
  opts: { newOnly?: boolean } = {},
): Promise<SyncPlan | 'expired'> {
  const res = await p.api.listHistory(startHistoryId);
  if (res === 'expired') return 'expired';
  const refs = (r: HistoryRecord): Ref[] =>
    [...r.messagesAdded, ...r.messagesDeleted, ...r.labelsAdded, ...r.labelsRemoved].map((x) => x.message);
  const all = res.records.flatMap(refs);
  const known = await lookupKnown(
    p.em,
    p.accountId,
    all.map((r) => r.id),
    res.records.flatMap((r) => r.messagesAdded.map((a) => a.message.threadId)),
  );

  const tracks = new Map<string, Track>();
  const wantsFetch = (t: Track) =>
    !t.deleted &&
    !t.stored &&
    (t.labels ? t.labels.includes('INBOX') || (t.added && known.threads.has(t.threadId)) : t.inboxHint);
  let candidates = new Set<string>();
  let checkpoint = startHistoryId;
  let processed = 0;
  let cut = false;
  for (const rec of res.records) {
    const local = new Map<string, Track>();
    const touch = (ref: Ref): Track => {
      let t = local.get(ref.id);
      if (!t) {
        const stored = known.messages.get(ref.id);
        const base = tracks.get(ref.id) ?? {
          threadId: ref.threadId,
          labels: stored ?? null,
          stored: stored !== undefined,
          added: false,
          deleted: false,
          inboxHint: false,
        };
        t = { ...base, labels: base.labels && [...base.labels] };
        local.set(ref.id, t);
      }
      return t;
    };
    for (const { message } of rec.messagesAdded) {
      const t = touch(message);
      t.added = true;
      if (message.labelIds) t.labels = [...message.labelIds];
      t.inboxHint = message.labelIds ? message.labelIds.includes('INBOX') : true;
    }
    for (const { message } of rec.messagesDeleted) touch(message).deleted = true;
    for (const [changes, add] of [
      [rec.labelsAdded, true],
      [rec.labelsRemoved, false],
    ] as const) {
      for (const { message, labelIds } of changes) {
        const t = touch(message);
        if (message.labelIds) t.labels = [...message.labelIds];
        else if (t.labels)
          t.labels = add ? [...new Set([...t.labels, ...labelIds])] : t.labels.filter((l) => !labelIds.includes(l));
        if (labelIds.includes('INBOX')) t.inboxHint = add;
      }
    }
    const next = new Set(candidates);
    for (const [id, t] of local) {
      if (wantsFetch(t)) next.add(id);
      else next.delete(id);
    }
    if (next.size > p.budget && processed > 0) {
      cut = true;
      break;
    }
    for (const [id, t] of local) tracks.set(id, t);
    candidates = next;
    checkpoint = rec.id;
    processed++;
  }

  const { metas, setAside, quota } = await fetchMeta(p, [...candidates]);
  const changes: StoreChanges = { ...noChanges(), upserts: metas, setAside };
  for (const [id, t] of tracks) {
    if (!t.stored) continue;
    if (t.deleted) changes.deletes.push(id);
    else if (!opts.newOnly && t.labels && !sameLabels(t.labels, known.messages.get(id)!))
      changes.labelChanges.push({ providerMessageId: id, labelIds: t.labels });
  }
  const complete = !cut && res.complete;
  const messagesSynced = changes.upserts.length + changes.labelChanges.length + changes.deletes.length;
  // The quota ran out part-way: what was fetched is stored, the checkpoint stays (the replay fetches only what is still unknown).
  if (quota)
    return {
      mode: 'history',
      changes,
      next: { historyId: startHistoryId, cursor: null, fullSyncActive: false },
      messagesSynced,
      hasMore: true,
      quota: quota.error,
    };
  return {
    mode: 'history',
    changes,
    next: {
      historyId: complete && BigInt(res.historyId) > BigInt(checkpoint) ? res.historyId : checkpoint,
      cursor: null,
      fullSyncActive: false,
    },
    messagesSynced,
    hasMore: !complete,
  };
}
