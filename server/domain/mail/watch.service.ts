/**
 * The mail watch of each account: registered right after sign-in with PUBSUB_TOPIC (label
 * INBOX), renewed daily (the provider drops watches after 7 days), stopped at disconnect
 * and deletion. Its state (expiry, last renewal) lives in sync_states.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { SyncState } from '../../../db/entities/index.ts';
import { errorSummary, type Logger } from '../../infra/logger.ts';
import type { MailWatchControl } from '../auth/auth.service.ts';

/** The provider's watch calls of one account, on one client (the same grant for a watch and its undoing). */
export interface MailWatchApi {
  open(accountId: string): Promise<{
    watch(req: { topicName: string; labelIds: string[] }): Promise<{ expiration: Date }>;
    stop(): Promise<void>;
  }>;
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

  /**
   * Registers (or renews) the watch, then records it only while the account is still
   * connected: a disconnect or deletion that ran meanwhile has already stopped the old watch,
   * so the one just made is stopped again with the same client, and nothing is left behind.
   */
  async function register(accountId: string) {
    if (!deps.topic) return;
    const api = await deps.api.open(accountId);
    const { expiration } = await api.watch({ topicName: deps.topic, labelIds: ['INBOX'] });
    const kept = (await deps.orm.em.getConnection().execute(
      `update sync_states s set watch_expires_at = ?, watch_renewed_at = ?
        where s.account_id = ? and exists (select 1 from credentials c join accounts a on a.id = c.account_id where c.account_id = s.account_id and not a.needs_reconnect)
        returning s.account_id`,
      [expiration, clock(), accountId],
    )) as unknown[];
    if (!kept.length) {
      // Where the grant is already revoked the provider refuses the stop, and stops the watch itself.
      await api.stop().then(
        () => log.info({ accountId }, 'mail watch made during a disconnect was stopped again'),
        (err: unknown) => log.warn({ accountId, ...errorSummary(err) }, 'stopping a watch made during a disconnect failed'),
      );
      return;
    }
    log.info({ accountId, expiresAt: expiration.toISOString() }, 'mail watch registered');
  }

  return {
    register,
    async stop(em: EntityManager, accountId: string) {
      if (!deps.topic) return;
      const state = await em.findOne(SyncState, { account: accountId });
      if (!state?.watchExpiresAt) return;
      await (await deps.api.open(accountId)).stop();
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
