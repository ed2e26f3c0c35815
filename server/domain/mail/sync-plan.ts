/**
 * What one bounded sync call reads from the provider and decides to write, before anything
 * is written: either the next page of an inbox listing (first sync, or a full resync after
 * the checkpoint expired) or the history since the stored checkpoint. Nothing here writes;
 * the caller commits the plan's changes and its new checkpoint in one transaction.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { GmailApi, HistoryRecord } from '../../providers/gmail.ts';
import { lookupKnown, noChanges, type StoreChanges } from './mail-store.ts';
import { toMessageMeta } from './message-parse.ts';

export interface SyncPlan {
  mode: 'listing' | 'history';
  changes: StoreChanges;
  next: { historyId: string | null; cursor: string | null; fullSyncActive: boolean };
  messagesSynced: number;
  hasMore: boolean;
}

interface PlanContext {
  api: GmailApi;
  em: EntityManager;
  accountId: string;
  /** Most messages fetched (messages.get) in this call. */
  budget: number;
}

/** Where a listing stopped, and when the (re)sync began (for the final sweep). */
export interface ListingCursor {
  startedAt: string;
  pageToken?: string;
}

export function encodeCursor(c: ListingCursor): string {
  return JSON.stringify(c);
}

export function decodeCursor(raw: string | null): ListingCursor | null {
  if (!raw) return null;
  try {
    const c = JSON.parse(raw) as Partial<ListingCursor>;
    if (typeof c.startedAt !== 'string') return null;
    return { startedAt: c.startedAt, ...(typeof c.pageToken === 'string' ? { pageToken: c.pageToken } : {}) };
  } catch {
    return null;
  }
}

const sameLabels = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((l) => b.includes(l));

/** One page of the inbox listing, newest first; every listed message is (re)fetched as metadata. */
export async function planListingPage(p: PlanContext, checkpoint: string, cursor: ListingCursor): Promise<SyncPlan> {
  const page = await p.api.listInbox({ pageToken: cursor.pageToken, maxResults: p.budget });
  const ids = page.messages.map((m) => m.id);
  const [known, fetched] = await Promise.all([lookupKnown(p.em, p.accountId, ids, []), p.api.getMetadata(ids)]);
  const upserts = fetched.map(toMessageMeta);
  const changed = upserts.filter((u) => {
    const stored = known.messages.get(u.providerMessageId);
    return !stored || !sameLabels(stored, u.labelIds);
  });
  const done = !page.nextPageToken;
  // Changes made while the listing was drained are replayed from the checkpoint by the next
  // call: say so, or a caller (the notification poller) would stop with them unsynced.
  const changedSince = done ? BigInt((await p.api.profile()).historyId) > BigInt(checkpoint) : false;
  return {
    mode: 'listing',
    // Known messages are rewritten too: that marks them as seen by this resync for the final sweep.
    changes: { ...noChanges(), upserts, ...(done ? { sweepBefore: cursor.startedAt } : {}) },
    next: done
      ? { historyId: checkpoint, cursor: null, fullSyncActive: false }
      : { historyId: checkpoint, cursor: encodeCursor({ startedAt: cursor.startedAt, pageToken: page.nextPageToken }), fullSyncActive: true },
    messagesSynced: changed.length,
    hasMore: !done || changedSince,
  };
}

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

/** History since the checkpoint, folded per message; stops at a record boundary once the fetch budget is reached. */
export async function planHistory(p: PlanContext, startHistoryId: string): Promise<SyncPlan | 'expired'> {
  const res = await p.api.listHistory(startHistoryId);
  if (res === 'expired') return 'expired';
  const refs = (r: HistoryRecord): Ref[] => [...r.messagesAdded, ...r.messagesDeleted, ...r.labelsAdded, ...r.labelsRemoved].map((x) => x.message);
  const all = res.records.flatMap(refs);
  const known = await lookupKnown(p.em, p.accountId, all.map((r) => r.id), res.records.flatMap((r) => r.messagesAdded.map((a) => a.message.threadId)));

  const tracks = new Map<string, Track>();
  const wantsFetch = (t: Track) =>
    !t.deleted && !t.stored && (t.labels ? t.labels.includes('INBOX') || (t.added && known.threads.has(t.threadId)) : t.inboxHint);
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
        const base = tracks.get(ref.id) ?? { threadId: ref.threadId, labels: stored ?? null, stored: stored !== undefined, added: false, deleted: false, inboxHint: false };
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
    for (const [changes, add] of [[rec.labelsAdded, true], [rec.labelsRemoved, false]] as const) {
      for (const { message, labelIds } of changes) {
        const t = touch(message);
        if (message.labelIds) t.labels = [...message.labelIds];
        else if (t.labels) t.labels = add ? [...new Set([...t.labels, ...labelIds])] : t.labels.filter((l) => !labelIds.includes(l));
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

  const fetched = candidates.size ? await p.api.getMetadata([...candidates]) : [];
  const changes: StoreChanges = { ...noChanges(), upserts: fetched.map(toMessageMeta) };
  for (const [id, t] of tracks) {
    if (!t.stored) continue;
    if (t.deleted) changes.deletes.push(id);
    else if (t.labels && !sameLabels(t.labels, known.messages.get(id)!)) changes.labelChanges.push({ providerMessageId: id, labelIds: t.labels });
  }
  const complete = !cut && res.complete;
  return {
    mode: 'history',
    changes,
    next: { historyId: complete && BigInt(res.historyId) > BigInt(checkpoint) ? res.historyId : checkpoint, cursor: null, fullSyncActive: false },
    messagesSynced: changes.upserts.length + changes.labelChanges.length + changes.deletes.length,
    hasMore: !complete,
  };
}
