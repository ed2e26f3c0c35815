/**
 * What one bounded sync call reads from the provider and decides to write, before anything
 * is written: either the next page of an inbox listing (first sync, or a full resync after
 * the checkpoint expired) or the history since the stored checkpoint. Nothing here writes;
 * the caller commits the plan's changes and its new checkpoint in one transaction.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { GmailApi, HistoryRecord } from '../../providers/gmail.ts';
import { lookupKnown, noChanges, type StoreChanges } from './mail-store.ts';
import { fetchMeta } from './message-fetch.ts';

export interface SyncPlan {
  mode: 'listing' | 'history';
  changes: StoreChanges;
  next: { historyId: string | null; cursor: string | null; fullSyncActive: boolean; mailboxAddress?: string };
  messagesSynced: number;
  hasMore: boolean;
}

export interface PlanContext {
  api: GmailApi;
  em: EntityManager;
  accountId: string;
  /** Most messages fetched (messages.get) in this call. */
  budget: number;
  /** A message failing again may be set aside (background syncs); false: every failure fails the call (the route). */
  setAside?: boolean;
}

/**
 * Where a listing stopped, and when the (re)sync began. Once every page is stored the
 * listing reconciles (`reconcile`): each stored message the listing did not refresh (it left
 * the inbox or was deleted meanwhile) is fetched again, its labels stored, or it is deleted.
 */
export interface ListingCursor {
  startedAt: string;
  pageToken?: string;
  reconcile?: boolean;
}

export function encodeCursor(c: ListingCursor): string {
  return JSON.stringify(c);
}

export function decodeCursor(raw: string | null): ListingCursor | null {
  if (!raw) return null;
  try {
    const c = JSON.parse(raw) as Partial<ListingCursor>;
    if (typeof c.startedAt !== 'string') return null;
    return { startedAt: c.startedAt, ...(typeof c.pageToken === 'string' ? { pageToken: c.pageToken } : {}), ...(c.reconcile === true ? { reconcile: true } : {}) };
  } catch {
    return null;
  }
}

const sameLabels = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((l) => b.includes(l));

/** One page of the inbox listing, newest first; every listed message is (re)fetched as metadata. */
export async function planListingPage(p: PlanContext, checkpoint: string, cursor: ListingCursor): Promise<SyncPlan> {
  const page = await p.api.listInbox({ pageToken: cursor.pageToken, maxResults: p.budget });
  const ids = page.messages.map((m) => m.id);
  const [known, { metas: upserts, setAside }] = await Promise.all([lookupKnown(p.em, p.accountId, ids, []), fetchMeta(p, ids)]);
  const changed = upserts.filter((u) => {
    const stored = known.messages.get(u.providerMessageId);
    return !stored || !sameLabels(stored, u.labelIds);
  });
  const done = !page.nextPageToken;
  const listed: SyncPlan = {
    mode: 'listing',
    // Known messages are rewritten too: that marks them as seen by this listing for the reconciliation.
    changes: { ...noChanges(), upserts, setAside },
    next: {
      historyId: checkpoint,
      cursor: encodeCursor(done ? { startedAt: cursor.startedAt, reconcile: true } : { startedAt: cursor.startedAt, pageToken: page.nextPageToken }),
      fullSyncActive: true,
    },
    messagesSynced: changed.length,
    hasMore: true,
  };
  if (!done || ids.length >= p.budget) return listed;
  // The last page left budget over: the reconciliation starts in the same call (this page's messages are refreshed already).
  const rest = await planReconcile({ ...p, budget: p.budget - ids.length }, checkpoint, { startedAt: cursor.startedAt, reconcile: true }, ids);
  return {
    ...rest,
    changes: { ...rest.changes, upserts: [...upserts, ...rest.changes.upserts], setAside: [...setAside, ...(rest.changes.setAside ?? [])] },
    messagesSynced: listed.messagesSynced + rest.messagesSynced,
  };
}

/**
 * The listing's last phase: stored messages it did not refresh, fetched again a budget at a
 * time (set-aside ones excepted: they have their own retries). Returned: stored with their
 * current labels (an archived message leaves the inbox, a read one is read); not returned:
 * deleted. Done when none is left: the checkpoint's history is replayed next.
 */
export async function planReconcile(p: PlanContext, checkpoint: string, cursor: ListingCursor, refreshed: string[] = []): Promise<SyncPlan> {
  const rows = await p.em.execute<{ pmid: string; labels: string[] }[]>(
    `select m.provider_message_id as pmid, m.label_ids as labels from mail_messages m
      where m.account_id = ? and m.updated_at < ?::timestamptz and m.provider_message_id <> all(array[?]::text[])
        and not exists (select 1 from mail_set_aside s where s.account_id = m.account_id and s.provider_message_id = m.provider_message_id)
      order by m.provider_message_id limit ?`,
    [p.accountId, cursor.startedAt, refreshed, p.budget],
  );
  const { metas, setAside } = rows.length ? await fetchMeta(p, rows.map((r) => r.pmid)) : { metas: [], setAside: [] };
  const answered = new Set([...metas.map((m) => m.providerMessageId), ...setAside.map((x) => x.providerMessageId)]);
  const stored = new Map(rows.map((r) => [r.pmid, r.labels]));
  const deletes = rows.map((r) => r.pmid).filter((id) => !answered.has(id));
  const relabelled = metas.filter((m) => !sameLabels(stored.get(m.providerMessageId) ?? [], m.labelIds)).length;
  // Every answered message is rewritten (its updated_at moves past startedAt): reconciled once.
  const changes: StoreChanges = { ...noChanges(), upserts: metas, deletes, setAside };
  if (rows.length >= p.budget) {
    return { mode: 'listing', changes, next: { historyId: checkpoint, cursor: encodeCursor(cursor), fullSyncActive: true }, messagesSynced: relabelled + deletes.length, hasMore: true };
  }
  // None left after these: the listing is complete. Changes made while it was drained are
  // replayed from the checkpoint by the next call: say so.
  const changedSince = BigInt((await p.api.profile()).historyId) > BigInt(checkpoint);
  return { mode: 'listing', changes, next: { historyId: checkpoint, cursor: null, fullSyncActive: false }, messagesSynced: relabelled + deletes.length, hasMore: changedSince };
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

  const { metas, setAside } = await fetchMeta(p, [...candidates]);
  const changes: StoreChanges = { ...noChanges(), upserts: metas, setAside };
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
