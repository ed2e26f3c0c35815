/**
 * The mail sync engine, shared by POST /api/mail/sync and the background sync jobs.
 *
 * One call: take the account's lease (a second caller gets RATE_LIMITED at once), read the
 * provider (history since the stored checkpoint, or the next page of an inbox listing;
 * an expired checkpoint falls back to a full resync in the same call), then commit the
 * data and the new checkpoint in one transaction that also releases the lease. Provider
 * calls all happen before that transaction, so a failure at any point leaves the stored
 * data and the checkpoint exactly as they were, and a re-run redoes the same work.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { errorSummary, type Logger } from '../../../infra/logger.ts';
import type { GmailApi, GmailFactory, QuotaUse } from '../../../providers/gmail.ts';
import type { CredentialsService } from '../../auth/credentials.service.ts';
import { AppError } from '../../errors.ts';
import { announceCommit, announceSync } from '../../events/announce.ts';
import { applyChanges } from '../mail-store.ts';
import {
  acquireLease,
  commitCheckpoint,
  extendLease,
  LEASE_SECONDS,
  readInboxEstimate,
  readSyncState,
  releaseLease,
  type LeasedState,
} from './states/index.ts';
import { MessageFetchFailures, planSetAsideRetry } from './message-fetch.ts';
import { recordSetAside } from './set-aside.ts';
import { decodeCursor, startCursor } from './listing-cursor.ts';
import { planListing } from './listing-plan.ts';
import { planHistory, type SyncPlan } from './sync-plan.ts';

/** Renews the lease every third of its length until stopped; a failed renewal is retried at the next beat. */
function keepAlive(renew: () => Promise<unknown>, seconds = LEASE_SECONDS): { stop(): void } {
  const timer = setInterval(() => void renew().catch(() => undefined), (seconds * 1000) / 3);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

class LeaseLost extends Error {
  constructor() {
    super('sync lease lost before commit');
  }
}

/** `err` while the account exists; AUTH_REQUIRED once it is gone (deleted: its caller's session went with it). */
async function unlessGone(em: EntityManager, accountId: string, err: AppError): Promise<AppError> {
  const exists =
    (await em.execute<unknown[]>('select 1 from accounts where id = ?', [accountId]).catch(() => [1])).length > 0;
  return exists ? err : new AppError('AUTH_REQUIRED');
}

/** Most new messages one call handles (spec part 8). */
export const SYNC_BATCH = 50;
/** Retry-After for a caller refused because a sync of the account is running. */
const BUSY_RETRY_AFTER_SECONDS = 5;
const INSTANCE = `${hostname()}:${process.pid}`;

export interface SyncOptions {
  /** Messages fetched per call, 1..50 (default 50). */
  maxMessages?: number;
  /** Ignore the stored checkpoint and list the whole inbox again (reconciling with the store). */
  fullResync?: boolean;
  /** Who asked: the user (the sync route: its calls go in the user's quota lane) or a background job (default). */
  caller?: 'user' | 'job';
}

export interface SyncOutcome {
  messagesSynced: number;
  /** More work remains beyond this call's bound: call again. */
  hasMore: boolean;
  lastSyncedAt: string;
}

export interface SyncService {
  syncAccount(accountId: string, opts?: SyncOptions): Promise<SyncOutcome>;
  /** The stored sync state (and, while bulk work waits for the daily quota budget, until when); no provider call. */
  syncState(em: EntityManager, accountId: string): Promise<{ lastSyncedAt: string | null; quotaWaitUntil?: string }>;
}

export function createSyncService(deps: {
  orm: MikroORM;
  gmail: GmailFactory;
  credentials: CredentialsService;
  log: Logger;
  clock?: () => Date;
  leaseSeconds?: number;
  /** After a commit that stored messages (the container queues analysis on arrival). */
  onStored?: (accountId: string) => Promise<unknown>;
}): SyncService {
  const { orm, credentials, log } = deps;
  const clock = deps.clock ?? (() => new Date());

  /**
   * `use` moves the client's calls between quota lanes: history reads are `live` (the incremental
   * lane: notified mail goes ahead of a listing), a listing's pages and fetches `bulk` (the lane
   * that leaves room for the others).
   */
  async function plan(
    api: GmailApi,
    use: (phase: 'live' | 'bulk') => void,
    em: EntityManager,
    accountId: string,
    lease: LeasedState,
    budget: number,
    opts: SyncOptions,
  ): Promise<SyncPlan> {
    const ctx = { api, use, em, accountId, budget };
    const cursor = decodeCursor(lease.cursor);
    // A listing under way resumes where it stopped, even when a full resync is asked for: it is one.
    if (lease.historyId && lease.fullSyncActive && cursor) {
      const resumed = await planListing(ctx, lease.historyId, cursor, false);
      if (resumed !== 'expired') return resumed;
      log.info({ accountId }, 'the history a listing began at expired; listing again');
    }
    if (opts.fullResync !== true && lease.historyId && !lease.fullSyncActive) {
      use('live');
      const incremental = await planHistory(ctx, lease.historyId);
      if (incremental !== 'expired') return incremental;
      log.info({ accountId }, 'mail history checkpoint expired; falling back to a full resync');
    }
    // A new listing: its checkpoint is the history id from before the first page (what changes
    // meanwhile is read from there), and the provider's inbox count is its progress's total. An
    // account that had a checkpoint has a stored copy: the listing is a resync (unread ids first).
    use('bulk');
    const [{ historyId, emailAddress }, inboxEstimate] = await Promise.all([api.profile(), readInboxEstimate(api)]);
    const begun = await planListing(
      ctx,
      historyId,
      startCursor(lease.dbNow, historyId, lease.historyId !== null),
      true,
    );
    // Notifications name the mailbox by this address, which need not be the sign-in email: kept with the checkpoint.
    return { ...begun, next: { ...begun.next, mailboxAddress: emailAddress, inboxEstimate } };
  }

  /**
   * A sync cut off by a database outage could not release its lease: keep trying for a
   * while, so the account is not refused until the lease expires once the database is back.
   */
  function retryRelease(accountId: string, owner: string, attempt = 1) {
    if (attempt > 12) return;
    setTimeout(
      () => {
        releaseLease(orm.em.fork(), accountId, owner).catch(() => retryRelease(accountId, owner, attempt + 1));
      },
      Math.min(10_000, 500 * attempt),
    ).unref();
  }

  return {
    async syncAccount(accountId, opts = {}) {
      const budget = Math.max(1, Math.min(SYNC_BATCH, Math.trunc(opts.maxMessages ?? SYNC_BATCH)));
      const started = Date.now();
      const em = orm.em.fork();
      const owner = `${INSTANCE}:${randomUUID()}`;
      const lease = await acquireLease(em, accountId, owner, deps.leaseSeconds);
      if (!lease)
        throw await unlessGone(em, accountId, new AppError('RATE_LIMITED', { retryAfter: BUSY_RETRY_AFTER_SECONDS }));
      let api: GmailApi | undefined;
      const heartbeat = keepAlive(
        () => extendLease(orm.em.fork(), accountId, owner, deps.leaseSeconds),
        deps.leaseSeconds,
      );
      try {
        const auth = await credentials.client(em, accountId);
        // The route's calls are the user's; a job's history reads are incremental, its listing bulk: a
        // listing under way or a first one is counted as a backfill, one that begins from a checkpoint as a resync.
        const user = opts.caller === 'user';
        const bulkPurpose = lease.historyId && !lease.fullSyncActive ? 'resync' : 'backfill';
        const quota: QuotaUse = { accountId, purpose: user ? 'sync' : 'incremental' };
        const use = (phase: 'live' | 'bulk') =>
          void (quota.purpose = user ? 'sync' : phase === 'live' ? 'incremental' : bulkPurpose);
        api = deps.gmail(auth, quota);
        const p = await plan(api, use, em, accountId, lease, budget, opts);
        if (!p.hasMore && lease.setAsideDue) {
          // Caught up: the set-aside messages that are due get another try in the same commit.
          use('live');
          const retry = await planSetAsideRetry(api, em, accountId);
          p.changes.upserts.push(...retry.upserts);
          p.changes.setAside = [...(p.changes.setAside ?? []), ...(retry.setAside ?? [])];
          p.changes.setAsideGone = retry.setAsideGone;
          // A set-aside message the provider no longer has leaves the store too (it may have been stored before it failed).
          p.changes.deletes.push(...(retry.setAsideGone ?? []));
          p.changes.setAsideRecovered = retry.setAsideRecovered;
          p.messagesSynced += retry.upserts.length;
        }
        const lastSyncedAt = clock();
        const synced = p.messagesSynced;
        const lost = () => new LeaseLost();
        const { upserts, labelChanges, deletes, setAside, setAsideGone } = p.changes;
        // A listing call keeps its ids and marks in mail_listing with the commit: always a transaction.
        if (
          p.mode !== 'listing' &&
          !upserts.length &&
          !labelChanges.length &&
          !deletes.length &&
          !setAside?.length &&
          !setAsideGone?.length
        ) {
          // Nothing to store: the checkpoint moves in one statement, no transaction needed.
          const committed = await commitCheckpoint(em, accountId, owner, { ...p.next, lastSyncedAt }, lease.dbNow);
          if (!committed) throw lost();
          // Where the account stands changed only when it was catching up (when the lease was taken, or notified
          // since: the stream heard `catching_up`), a listing began or ended, or it never synced.
          if (
            lease.behind ||
            committed.notifiedSinceLease ||
            p.next.fullSyncActive !== lease.fullSyncActive ||
            !lease.lastSyncedAt
          )
            await announceSync(em, accountId);
        } else {
          await em.transactional(async (tx) => {
            if (!(await commitCheckpoint(tx, accountId, owner, { ...p.next, lastSyncedAt }))) throw lost();
            await applyChanges(tx, accountId, p.changes);
            await announceCommit(tx, accountId, p.changes);
          });
          // Stored mail may want analysis on arrival (a job of its own: never this sync's failure).
          if (upserts.length)
            await deps
              .onStored?.(accountId)
              .catch((e: unknown) =>
                log.warn({ accountId, ...errorSummary(e) }, 'queueing analysis on arrival failed'),
              );
        }
        log.info(
          {
            accountId,
            mode: p.mode,
            messagesSynced: synced,
            hasMore: p.hasMore,
            providerRequests: api.requests,
            ms: Date.now() - started,
          },
          'mail sync',
        );
        // A person may have to look (mia_mail_set_aside_messages counts them): say which and why.
        for (const x of setAside ?? [])
          log.warn({ accountId, providerMessageId: x.providerMessageId, reason: x.reason }, 'message set aside');
        // The quota ran out part-way: what was fetched is stored; the caller hears the quota (and comes back after it).
        if (p.quota) throw p.quota;
        return { messagesSynced: synced, hasMore: p.hasMore, lastSyncedAt: lastSyncedAt.toISOString() };
      } catch (thrown) {
        // The commit found no lease: the account was deleted meanwhile (its caller's session went with it), or another sync took over.
        const err =
          thrown instanceof LeaseLost
            ? await unlessGone(em, accountId, new AppError('SYNC_FAILED', { cause: thrown }))
            : thrown;
        await releaseLease(em, accountId, owner).catch((e: unknown) => {
          log.warn({ accountId, ...errorSummary(e) }, 'releasing the sync lease failed; retrying in the background');
          retryRelease(accountId, owner);
        });
        if (err instanceof AppError && err.cause instanceof MessageFetchFailures) {
          // Remembered: if these messages fail so again they are set aside and the account moves on.
          await recordSetAside(em, accountId, err.cause.failures).catch(() => undefined);
        }
        const code = err instanceof AppError ? err.code : 'unexpected';
        log.warn(
          { accountId, code, providerRequests: api?.requests ?? 0, ms: Date.now() - started },
          'mail sync failed',
        );
        if (err instanceof AppError && err.code === 'TOKEN_EXPIRED' && err.cause)
          await credentials.rethrowIfRevoked(accountId, err.cause);
        throw err;
      } finally {
        heartbeat.stop();
      }
    },

    async syncState(em, accountId) {
      return readSyncState(em, accountId);
    },
  };
}
