/**
 * The mail watch of each account: registered right after sign-in with PUBSUB_TOPIC (label
 * INBOX), renewed daily (the provider drops watches after 7 days), stopped at disconnect
 * and deletion. Its state (expiry, last renewal) lives in sync_states.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { errorSummary, type Logger } from '../../infra/logger.ts';
import type { MailWatchControl } from '../auth/auth.service.ts';
import { clearWatch, readWatchExpiry, recordWatch, watchesDue } from './sync-states.ts';

/** The provider's watch calls of one account, on one client (the same grant for a watch and its undoing). */
export interface MailWatchApi {
  open(accountId: string): Promise<{
    watch(req: { topicName: string; labelIds: string[] }): Promise<{ expiration: Date }>;
    stop(): Promise<void>;
  }>;
}

export const RENEW_AFTER_MS = 24 * 3600 * 1000;
/** Watches one renewal run takes (oldest renewal first); the next run takes the next ones. */
const RENEWAL_BATCH = 500;

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
    if (!(await recordWatch(deps.orm.em.getConnection(), accountId, expiration, clock()))) {
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
      if (!(await readWatchExpiry(em, accountId))) return;
      await (await deps.api.open(accountId)).stop();
      await clearWatch(em, accountId);
      log.info({ accountId }, 'mail watch stopped');
    },
    /**
     * Renews every watch of a connected account last renewed more than a day ago (or never),
     * or that would lapse within a day (a provider may grant less than its usual week).
     */
    async renewDue() {
      if (!deps.topic) return { renewed: 0, failed: [] };
      const now = clock().getTime();
      const due = await watchesDue(deps.orm.em.getConnection(), new Date(now - RENEW_AFTER_MS), new Date(now + RENEW_AFTER_MS), RENEWAL_BATCH);
      const failed: string[] = [];
      for (const accountId of due) {
        await register(accountId).catch((err: unknown) => {
          failed.push(accountId);
          log.warn({ accountId, ...errorSummary(err) }, 'mail watch renewal failed');
        });
      }
      return { renewed: due.length - failed.length, failed };
    },
  };
}
export type WatchService = ReturnType<typeof createWatchService>;
