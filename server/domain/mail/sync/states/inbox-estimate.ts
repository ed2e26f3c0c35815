/**
 * A backfill's estimated total: the provider's inbox count (`labels/INBOX`), read once when
 * an inbox listing begins and stored with the listing's first checkpoint (`inbox_estimate`,
 * lease.ts commitCheckpoint), so the `sync` events of the whole listing report "1,240 of
 * ~3,000" at no further provider cost, whatever the number of events or open streams. Best effort: a count that fails, is
 * missing or is slow leaves the estimate unknown (null) and never fails or holds up the sync.
 */
import type { GmailApi } from '../../../../providers/gmail.ts';

/** How long a listing's start waits for the count (it runs beside the profile call, which takes about as long). */
export const ESTIMATE_WAIT_MS = 2_000;

/** The provider's inbox count, or null when it fails, is missing or takes longer than `waitMs`. Never throws. */
export async function readInboxEstimate(
  api: Pick<GmailApi, 'inboxCount'>,
  waitMs = ESTIMATE_WAIT_MS,
): Promise<number | null> {
  let estimate: number | null = null;
  let timer: NodeJS.Timeout | undefined;
  try {
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), waitMs);
    });
    estimate = (await Promise.race([api.inboxCount?.() ?? null, late])) ?? null;
  } catch {
    estimate = null; // the count is a nicety: quota, grant and provider failures are the sync's own calls' to report
  } finally {
    clearTimeout(timer);
  }
  return estimate;
}
