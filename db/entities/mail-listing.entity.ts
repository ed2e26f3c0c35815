/**
 * One id of an inbox listing under way (a backfill or a resync), until the listing ends: the
 * listing is read as ids only and compared with the store, so only unknown messages are
 * fetched (see the migration that creates this table and server/domain/mail/sync/sync-plan.ts).
 */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const MailListingSchema = defineEntity({
  name: 'MailListing',
  tableName: 'mail_listing',
  indexes: [
    {
      name: 'mail_listing_pending_index',
      expression: 'create index "mail_listing_pending_index" on "mail_listing" ("account_id", "pos") where "pending"',
    },
  ],
  properties: {
    account: () => p.manyToOne(Account).mapToPk().primary().deleteRule('cascade'),
    providerMessageId: p.string().primary(),
    pos: p.integer().default(0),
    unread: p.boolean().default(false),
    inbox: p.boolean().default(false),
    /** Listed, unknown to the store, not fetched yet. */
    pending: p.boolean().default(false),
    /** The listed id's thread, when its page named it. */
    providerThreadId: p.string().nullable(),
    /** Named by a resync's listing of what lies outside the inbox (a stored reply or archived message still there). */
    outside: p.boolean().default(false),
  },
});
export class MailListing extends MailListingSchema.class {}
MailListingSchema.setClass(MailListing);
