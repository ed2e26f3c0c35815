/**
 * The end of a listing (listing-plan.ts): the stored messages it did not name are checked.
 *
 * - **gone**: stored inbox messages the inbox listing did not name are fetched: returned ones
 *   are stored with their labels (archived, most often), the others were deleted upstream.
 * - **outside** (a resync only: a store older than the listing holds messages outside the
 *   inbox, the replies and archived messages of its threads): what lies outside the inbox is
 *   listed too, as ids only (`-in:inbox`, 500 a page at 5 quota units: a 100k-message mailbox
 *   costs 1,000 units, not the 2M of fetching it). A stored message named there is still there,
 *   made read or unread from the unread listing when the commit records it (listing-store.ts);
 *   one not named is fetched like the gone phase's. The thread's detail and its unread state then
 *   match the provider's, not only its inbox messages.
 */
import type { AppError } from '../../errors.ts';
import type { ListingCursor } from './listing-cursor.ts';
import { LISTING_PAGE } from './listing-cursor.ts';
import { staleOutside, unnamedStored } from './listing-store.ts';
import type { StoreChanges } from '../mail-store.ts';
import { fetchMeta, goneOf } from './message-fetch.ts';
import type { PlanContext } from './sync-plan.ts';

/** Pages of the outside listing per call at most: ids only, nothing is fetched for a named one. */
const OUTSIDE_PAGES_PER_CALL = 20;

export interface EndsInput {
  /** Messages this call may still fetch. */
  budget: number;
  /** The listing's recorded ids are its own (false in the call that began it: they are an older one's). */
  own: boolean;
  /** Inbox ids this call listed (not recorded yet). */
  named: string[];
}

export interface EndsResult {
  /** Nothing is left to check: the listing is complete. */
  done: boolean;
  /** Messages fetched (the call's budget spent). */
  spent: number;
  /** Stored messages that changed (fetched again or gone). */
  synced: number;
  quota?: AppError;
}

/** The gone and outside phases of one call; moves `c` on and adds what it learnt to `changes`. */
export async function planEnds(
  p: PlanContext,
  c: ListingCursor,
  input: EndsInput,
  changes: StoreChanges,
): Promise<EndsResult> {
  const r: EndsResult = { done: false, spent: 0, synced: 0 };
  const left = () => input.budget - r.spent;
  /** Fetches stored messages the listing did not name: true when fewer than the budget allowed (the phase's check is over). */
  const check = async (place: 'inbox' | 'outside', listedNow: string[]) => {
    const limit = left();
    if (limit <= 0) return false;
    const unnamed = await unnamedStored(p.em, p.accountId, place, c.startedAt, listedNow, limit, input.own);
    if (unnamed.length) {
      const got = await fetchMeta(p, unnamed);
      // Returned: stored with its current labels; not returned: deleted upstream.
      changes.upserts.push(...got.metas);
      if (got.setAside.length) changes.setAside = [...(changes.setAside ?? []), ...got.setAside];
      const deletes = goneOf(unnamed, got);
      changes.deletes.push(...deletes);
      r.synced += got.metas.length + deletes.length;
      r.spent += unnamed.length;
      if (got.quota) r.quota = got.quota.error;
    }
    return unnamed.length < limit && !r.quota;
  };

  if (c.phase === 'gone') {
    if (!(await check('inbox', input.named))) return r;
    // Nothing stored outside the inbox is older than the listing (a first backfill, an inbox-only store): nothing there to reconcile.
    if (!(await staleOutside(p.em, p.accountId, c.startedAt))) return { ...r, done: true };
    c.phase = 'outside';
    delete c.pageToken;
  }
  if (c.phase !== 'outside') return r;

  const outside: string[] = [];
  for (let pages = 0; !c.outsideListed && pages < OUTSIDE_PAGES_PER_CALL; pages++) {
    const page = await p.api.listInbox({
      labelIds: [],
      q: '-in:inbox',
      pageToken: c.pageToken,
      maxResults: LISTING_PAGE,
    });
    outside.push(...page.messages.map((m) => m.id));
    if (page.nextPageToken) c.pageToken = page.nextPageToken;
    else {
      c.outsideListed = true;
      delete c.pageToken;
    }
  }
  if (outside.length) changes.listedOutside = { ids: outside, since: c.startedAt };
  if (!c.outsideListed) return r;
  // A stored message this call relabelled into the inbox is not named outside it, and not in question.
  return { ...r, done: await check('outside', [...outside, ...input.named]) };
}
