/**
 * The mail watch of each account: registered right after sign-in with PUBSUB_TOPIC (label
 * INBOX), renewed daily (the provider drops watches after 7 days), stopped at disconnect
 * and deletion. Its state (expiry, last renewal) lives in sync_states.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { SyncState } from '../../../db/entities/index.ts';
import { errorSummary, type Logger } from '../../logger.ts';
import type { MailWatchControl } from '../auth/auth.service.ts';

export interface MailWatchApi {
  watch(accountId: string, topicName: string): Promise<{ expiration: Date }>;
  stop(accountId: string): Promise<void>;
}

export const RENEW_AFTER_MS = 24 * 3600 * 1000;

export function createWatchService(deps: {
  orm: MikroORM;
  api: MailWatchApi;
  topic?: string;
  log: Logger;
  clock?: () => Date;
}): MailWatchControl & { renewDue(): Promise<{ renewed: number; failed: string[] }> } {
  const clock = deps.clock ?? (() => new Date());
  const log = deps.log.child({ component: 'mail-watch' });

  async function register(accountId: string) {
    if (!deps.topic) return;
    const { expiration } = await deps.api.watch(accountId, deps.topic);
    await deps.orm.em.fork().nativeUpdate(SyncState, { account: accountId }, { watchExpiresAt: expiration, watchRenewedAt: clock() });
    log.info({ accountId, expiresAt: expiration.toISOString() }, 'mail watch registered');
  }

  return {
    register,
    async stop(em: EntityManager, accountId: string) {
      if (!deps.topic) return;
      const state = await em.findOne(SyncState, { account: accountId });
      if (!state?.watchExpiresAt) return;
      await deps.api.stop(accountId);
      await em.nativeUpdate(SyncState, { account: accountId }, { watchExpiresAt: null, watchRenewedAt: null });
      log.info({ accountId }, 'mail watch stopped');
    },
    /**
     * Renews every watch of a connected account last renewed more than a day ago (or never),
     * or that would lapse within a day (a provider may grant less than its usual week).
     */
    async renewDue() {
      if (!deps.topic) return { renewed: 0, failed: [] };
      const now = clock().getTime();
      const rows = (await deps.orm.em.getConnection().execute(
        `select s.account_id from sync_states s join credentials c on c.account_id = s.account_id
          join accounts a on a.id = s.account_id
         where not a.needs_reconnect and (s.watch_renewed_at is null or s.watch_renewed_at < ? or s.watch_expires_at < ?)
         order by s.watch_renewed_at nulls first limit 500`,
        [new Date(now - RENEW_AFTER_MS), new Date(now + RENEW_AFTER_MS)],
      )) as { account_id: string }[];
      const failed: string[] = [];
      for (const { account_id } of rows) {
        await register(account_id).catch((err: unknown) => {
          failed.push(account_id);
          log.warn({ accountId: account_id, ...errorSummary(err) }, 'mail watch renewal failed');
        });
      }
      return { renewed: rows.length - failed.length, failed };
    },
  };
}
export type WatchService = ReturnType<typeof createWatchService>;
