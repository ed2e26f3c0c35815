/**
 * Expired sessions and OAuth states are deleted on a schedule (the purge job): an
 * expired session row still holds an account id, an address and a CSRF token, and nothing
 * reads it again. The mail quota's old grants and days go too (domain/mail-quota/), and the event
 * logs of disconnected accounts and the ids of ended listings. Analytics events are kept ANALYTICS_RETENTION_DAYS: `page_view` is public,
 * so anyone can add rows, and without a retention the table only grows. Compared with the
 * database's clock, as the reads are.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { purgeQuota } from '../mail-quota/quota-ledger.ts';
import { purgeExpiredStates } from './oauth-states.ts';
import { purgeExpiredSessions } from './session-rows.ts';
import { purgeDisconnectedLogs } from '../events/event-log.ts';
import { purgeEndedListings } from '../mail/sync/listing-store.ts';

/** How long analytics events are kept (docs/security.md). */
export const ANALYTICS_RETENTION_DAYS = 90;

export interface Purged {
  sessions: number;
  oauthStates: number;
  analyticsEvents: number;
  mailQuotaRows: number;
  /** Event-log rows of disconnected accounts, and ids of listings no longer under way. */
  mailEvents: number;
  mailListing: number;
}

export async function purgeExpired(em: EntityManager): Promise<Purged> {
  const count = async (sql: string) =>
    (await em.execute<{ n: number }[]>(`with d as (${sql} returning 1) select count(*)::int as n from d`))[0]?.n ?? 0;
  return {
    sessions: await purgeExpiredSessions(em),
    oauthStates: await purgeExpiredStates(em),
    analyticsEvents: await count(
      `delete from analytics_events where created_at < now() - interval '${ANALYTICS_RETENTION_DAYS} days'`,
    ),
    // The mail quota's grants of accounts gone quiet, and its day ledger past keeping.
    mailQuotaRows: await purgeQuota(em),
    // Rows that only grow otherwise: the event logs of disconnected accounts, the ids of ended listings.
    mailEvents: await purgeDisconnectedLogs(em),
    mailListing: await purgeEndedListings(em),
  };
}
