/**
 * The inbox total of an account: how many of its threads are in the inbox. Kept by
 * statement-level triggers on mail_threads (see the migration that creates this table),
 * so that every write path — sync, thread detail, account deletion, direct inserts — keeps
 * it exact in the writing transaction, and the thread list reads one row instead of
 * counting the inbox on every request.
 */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const MailInboxCountSchema = defineEntity({
  name: 'MailInboxCount',
  tableName: 'mail_inbox_counts',
  properties: {
    account: () => p.oneToOne(Account).mapToPk().primary().deleteRule('cascade'),
    total: p.integer().default(0),
  },
});
export class MailInboxCount extends MailInboxCountSchema.class {}
MailInboxCountSchema.setClass(MailInboxCount);
