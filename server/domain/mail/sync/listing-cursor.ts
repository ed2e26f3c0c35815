/**
 * Where a listing is (listing-plan.ts), as the sync state stores it between calls.
 */

/** Ids per listing page (the provider's maximum). */
export const LISTING_PAGE = 500;

export interface ListingCursor {
  /** The database clock when the listing began. */
  startedAt: string;
  /** The history id the live cursor has read to. */
  live: string;
  /**
   * unread: listing the unread ids; inbox: listing (and fetching) the inbox; gone: checking the
   * stored inbox messages it did not name; outside (a resync): listing what lies outside the
   * inbox, then checking the stored messages there it did not name.
   */
  phase: 'unread' | 'inbox' | 'gone' | 'outside';
  pageToken?: string;
  /** In the inbox phase: no page is left to list. */
  listed?: boolean;
  /** In the outside phase: no page is left to list. */
  outsideListed?: boolean;
  /** Ids listed so far in the inbox phase (their positions, newest first). */
  count: number;
}

export function encodeCursor(c: ListingCursor): string {
  return JSON.stringify(c);
}

/** The stored cursor, or null when there is none or it is of an older form (a new listing then starts). */
export function decodeCursor(raw: string | null): ListingCursor | null {
  if (!raw) return null;
  try {
    const c = JSON.parse(raw) as Partial<ListingCursor>;
    if (typeof c.startedAt !== 'string' || typeof c.live !== 'string' || !/^\d+$/.test(c.live)) return null;
    if (c.phase !== 'unread' && c.phase !== 'inbox' && c.phase !== 'gone' && c.phase !== 'outside') return null;
    return {
      startedAt: c.startedAt,
      live: c.live,
      phase: c.phase,
      ...(typeof c.pageToken === 'string' ? { pageToken: c.pageToken } : {}),
      ...(c.listed === true ? { listed: true } : {}),
      ...(c.outsideListed === true ? { outsideListed: true } : {}),
      count: typeof c.count === 'number' && Number.isSafeInteger(c.count) && c.count >= 0 ? c.count : 0,
    };
  } catch {
    return null;
  }
}

/** A new listing: its checkpoint is the history id read before its first page; `resync`: the store holds a copy already. */
export function startCursor(startedAt: string, historyId: string, resync: boolean): ListingCursor {
  return { startedAt, live: historyId, phase: resync ? 'unread' : 'inbox', count: 0 };
}
