/**
 * An inbox listing (the first backfill, or a resync after the provider dropped the history),
 * one bounded call at a time, planned before anything is written (the caller commits the
 * plan's changes and its cursor in one transaction). Two cursors move together:
 *
 * - **the listing**, read as ids only, 500 a page (`messages.list`, 5 quota units a page):
 *   the unread ids first on a resync (the account had a checkpoint; anywhere but spam and
 *   trash), then the inbox's ids, newest first, kept in `mail_listing`. Only ids the store does not
 *   know are fetched (`messages.get`, 5 units each, at most the call's budget); known ones
 *   are relabelled from the ids (in the inbox; unread or not); stored inbox messages the
 *   listing did not name are fetched at the end to learn whether they were archived or
 *   deleted, and a resync checks the stored messages outside the inbox too (listing-ends.ts). A resync of a 100k inbox that changed little costs a few hundred list pages,
 *   not 100k fetches.
 * - **the live history**, from the history id the listing began at: every call first reads
 *   what happened since, so mail that arrives while a long listing runs is stored within a
 *   call, not when the listing ends. While the listing runs it stores new messages and
 *   deletions only: labels of stored rows may still be older than the listing, so label
 *   changes wait for the replay from the listing's start once it ends (which fetches
 *   nothing the live cursor already stored).
 *
 * Rows written since the listing began (by the live history or by the listing's fetches)
 * are fresher than its pages: the relabelling and the end check leave them alone.
 */
import { noChanges, type StoreChanges } from '../mail-store.ts';
import { AppError } from '../../errors.ts';
import { knownListed, unknownListed } from './listing-store.ts';
import { fetchMeta, goneOf } from './message-fetch.ts';
import { planHistory, type PlanContext, type SyncPlan } from './sync-plan.ts';
import { encodeCursor, LISTING_PAGE, type ListingCursor } from './listing-cursor.ts';
import { planEnds } from './listing-ends.ts';

/** Listing pages read per call at most (each 5 quota units); a call stays short. */
const PAGES_PER_CALL = 4;

function merge(into: StoreChanges, from: StoreChanges): void {
  into.upserts.push(...from.upserts);
  into.deletes.push(...from.deletes);
  into.labelChanges.push(...from.labelChanges);
  if (from.setAside?.length) into.setAside = [...(into.setAside ?? []), ...from.setAside];
}

/**
 * One call of a listing. `checkpoint` is the history id the listing began at (the stored
 * checkpoint while it runs); `fresh`: the listing begins in this call (its live cursor is
 * where it starts). A fresh listing replaces whatever ids an earlier one left: it plans
 * without them, and they go in its commit, which the lease fences (a sync that lost its lease
 * meanwhile must not touch the ids of the listing that replaced it). 'expired': the history
 * since the listing began is gone; list again.
 */
export async function planListing(
  p: PlanContext,
  checkpoint: string,
  cursor: ListingCursor,
  fresh: false,
): Promise<SyncPlan | 'expired'>;
export async function planListing(
  p: PlanContext,
  checkpoint: string,
  cursor: ListingCursor,
  fresh: true,
): Promise<SyncPlan>;
export async function planListing(
  p: PlanContext,
  checkpoint: string,
  cursor: ListingCursor,
  fresh: boolean,
): Promise<SyncPlan | 'expired'> {
  const changes: StoreChanges = noChanges();
  if (fresh) changes.listingReplace = true;
  /** The listing's ids stored by earlier calls are its own (a fresh one has none yet). */
  const own = !fresh;
  const c: ListingCursor = { ...cursor };
  let budget = p.budget;
  let synced = 0;
  const fetched = new Set<string>();
  /** The quota ran out part-way through a fetch: this call stops there, keeping what it fetched. */
  let quota: AppError | undefined;
  /** What the live history read, kept on its own when the bulk work after it meets the quota before it fetched anything. */
  let liveRead: { changes: StoreChanges; fetched: string[]; synced: number; live: string } | undefined;

  if (!fresh) {
    p.use?.('live');
    const live = await planHistory(p, c.live, { newOnly: true });
    p.use?.('bulk');
    // The provider dropped the history the listing began at (a listing older than its retention): the caller begins again.
    if (live === 'expired') return 'expired';
    merge(changes, live.changes);
    for (const u of live.changes.upserts) fetched.add(u.providerMessageId);
    for (const x of live.changes.setAside ?? []) fetched.add(x.providerMessageId);
    budget -= fetched.size;
    synced += live.messagesSynced;
    c.live = live.next.historyId ?? c.live;
    if (live.quota) {
      quota = live.quota;
      budget = 0;
    }
    liveRead = { changes: live.changes, fetched: [...fetched], synced, live: c.live };
  }
  try {
    return await listingPart();
  } catch (err) {
    // Bulk work waiting for quota (its lane's window, the daily budget) never holds back notified mail the live read found.
    if (!liveRead || !(err instanceof AppError) || err.code !== 'MAIL_RATE_LIMITED') throw err;
    const kept = noChanges();
    merge(kept, liveRead.changes);
    kept.listingFetched = liveRead.fetched;
    const next = {
      historyId: checkpoint,
      cursor: encodeCursor({ ...cursor, live: liveRead.live }),
      fullSyncActive: true,
    };
    return { mode: 'listing', changes: kept, next, messagesSynced: liveRead.synced, hasMore: true, quota: err };
  }

  async function listingPart(): Promise<SyncPlan> {
    /** `threadOf`: the listed ids' threads (a page names them), so messages of one thread can come from one read. */
    const fetch = async (ids: string[], threadOf?: ReadonlyMap<string, string>) => {
      const want = ids.filter((id) => !fetched.has(id)).slice(0, Math.max(0, budget));
      if (!want.length) return;
      const got = await fetchMeta(p, want, threadOf);
      const unfetched = new Set(got.quota?.unfetched ?? []);
      for (const id of want) if (!unfetched.has(id)) fetched.add(id);
      budget -= want.length;
      // The quota ran out part-way: what was fetched is kept, the rest waits for the next call.
      if (got.quota) {
        quota = got.quota.error;
        budget = 0;
      }
      // Listed, then deleted before it was fetched: it leaves the listing (else it would be asked for again).
      const gone = goneOf(want, got);
      if (gone.length) changes.listingDrop = [...(changes.listingDrop ?? []), ...gone];
      changes.upserts.push(...got.metas);
      if (got.setAside.length) changes.setAside = [...(changes.setAside ?? []), ...got.setAside];
      synced += got.metas.length;
    };
    let pages = 0;
    if (c.phase === 'unread') {
      const unread: string[] = [];
      while (pages < PAGES_PER_CALL) {
        const page = await p.api.listInbox({ labelIds: ['UNREAD'], pageToken: c.pageToken, maxResults: LISTING_PAGE });
        pages++;
        unread.push(...page.messages.map((m) => m.id));
        if (!page.nextPageToken) {
          c.phase = 'inbox';
          delete c.pageToken;
          break;
        }
        c.pageToken = page.nextPageToken;
      }
      changes.listedUnread = unread;
    }

    if (c.phase === 'inbox') {
      // Unknown ids listed by earlier calls go first (newest first, a thread's together); more of them than the budget: no new page yet.
      let pending = budget <= 0;
      if (!fresh && budget > 0) {
        const unknown = await unknownListed(p.em, p.accountId, budget + 1);
        pending = unknown.length > budget;
        await fetch(
          unknown.map((u) => u.pmid),
          new Map(unknown.flatMap((u) => (u.thread ? [[u.pmid, u.thread] as const] : []))),
        );
      }
      const rows: { pmid: string; pos: number; pending: boolean; thread?: string }[] = [];
      while (!c.listed && !pending && !quota && pages < PAGES_PER_CALL) {
        const page = await p.api.listInbox({ labelIds: ['INBOX'], pageToken: c.pageToken, maxResults: LISTING_PAGE });
        pages++;
        const ids = page.messages.map((m) => m.id);
        if (page.nextPageToken) c.pageToken = page.nextPageToken;
        else {
          c.listed = true;
          delete c.pageToken;
        }
        const known = await knownListed(p.em, p.accountId, ids, c.startedAt, changes.listedUnread ?? [], own);
        for (const relabel of known.values()) if (relabel) synced++;
        const unknown = ids.filter((id) => !known.has(id));
        const threadOf = new Map(page.messages.map((m) => [m.id, m.threadId]));
        await fetch(unknown, threadOf);
        // Still to fetch: unknown and not fetched by this call (the next calls take them, in this order, by thread where they can).
        for (const id of ids)
          rows.push({
            pmid: id,
            pos: c.count++,
            pending: !known.has(id) && !fetched.has(id),
            thread: threadOf.get(id),
          });
        // More unknown ids on this page than the budget: the next calls fetch them from mail_listing.
        pending = unknown.some((id) => !fetched.has(id));
      }
      if (rows.length) changes.listedInbox = { rows, since: c.startedAt };
      if (c.listed && !pending && !quota) c.phase = 'gone';
    }

    let done = false;
    if ((c.phase === 'gone' || c.phase === 'outside') && !quota) {
      const ends = await planEnds(
        p,
        c,
        { budget, own, named: changes.listedInbox?.rows.map((r) => r.pmid) ?? [] },
        changes,
      );
      budget -= ends.spent;
      synced += ends.synced;
      if (ends.quota) quota = ends.quota;
      done = ends.done;
    }

    // Fetched (by the listing or the live cursor) or set aside: no longer pending.
    if (!fresh) changes.listingFetched = [...fetched];
    if (done) {
      changes.listingDone = true;
      // The listing is complete. What changed since it began is replayed from its start by the next
      // call: say so when the live cursor saw changes, or when a listing that began in this call finds
      // history since its first page (one history read: most often nothing, and nothing is left).
      const changedSince = BigInt(c.live) > BigInt(checkpoint) || (fresh && (await historySince(p, checkpoint)));
      return {
        mode: 'listing',
        changes,
        next: { historyId: checkpoint, cursor: null, fullSyncActive: false },
        messagesSynced: synced,
        hasMore: changedSince,
      };
    }
    return {
      mode: 'listing',
      changes,
      next: { historyId: checkpoint, cursor: encodeCursor(c), fullSyncActive: true },
      messagesSynced: synced,
      hasMore: true,
      ...(quota ? { quota } : {}),
    };
  }
}

/** Whether the provider's history holds anything since `historyId` (unreadable or expired: assume it does; the next call replays it). */
async function historySince(p: PlanContext, historyId: string): Promise<boolean> {
  p.use?.('live');
  try {
    const h = await p.api.listHistory(historyId);
    return h === 'expired' || !h.complete || h.records.length > 0;
  } catch {
    return true;
  } finally {
    p.use?.('bulk');
  }
}
