/**
 * Per-account sync checkpoint, listing cursor, sync lease and mail-watch state. The lease
 * (leaseOwner/leaseUntil) keeps one sync per account across instances without holding a
 * transaction open while the provider is called.
 */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const SyncStateSchema = defineEntity({
  name: 'SyncState',
  tableName: 'sync_states',
  properties: {
    account: () => p.oneToOne(Account).mapToPk().primary().deleteRule('cascade'),
    historyId: p.bigint('string').nullable(),
    fullSyncPageToken: p.text().nullable(),
    fullSyncActive: p.boolean().default(false),
    lastSyncedAt: p.datetime().nullable(),
    leaseOwner: p.string().nullable(),
    leaseUntil: p.datetime().nullable(),
    watchExpiresAt: p.datetime().nullable(),
    watchRenewedAt: p.datetime().nullable(),
    /** Renewals failed in a row, and when the next may be tried (a growing delay). */
    watchFailures: p.integer().default(0),
    watchRetryAt: p.datetime().nullable(),
    /** When the quiet sweep may take the account again (pushed back while its sync fails). */
    nextSweepAt: p.datetime().nullable(),
    /** The provider has no mailbox for the account: left out of watch renewal and the sweep until it signs in again. */
    noMailboxAt: p.datetime().nullable(),
    /** The address the provider gives the mailbox (its profile), which notifications name. */
    mailboxAddress: p.text().nullable(),
    lastNotificationAt: p.datetime().nullable(),
    /** The highest history id a notification named (the provider may notify before its history shows it). */
    notifiedHistoryId: p.bigint().nullable(),
    /** The provider's inbox message count, read when a listing begins: a backfill's estimated total (null: unknown). */
    inboxEstimate: p.integer().nullable(),
    /** The code of the last background sync failure, cleared by a sync that succeeds. */
    lastErrorCode: p.string().length(64).nullable(),
    failingSince: p.datetime().nullable(),
    /** When the account's sync job ran out of retries (kept in the job engine's dead-letter queue). */
    deadLetteredAt: p.datetime().nullable(),
    updatedAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
  indexes: [{ name: 'sync_states_watch_expires_idx', properties: ['watchExpiresAt'] }],
});
export class SyncState extends SyncStateSchema.class {}
SyncStateSchema.setClass(SyncState);
