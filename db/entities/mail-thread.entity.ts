/**
 * A provider thread of an account. `inInbox` is true while at least one of its messages is
 * in the inbox; the list query reads only those, newest first, through a partial index.
 */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const MailThreadSchema = defineEntity({
  name: 'MailThread',
  tableName: 'mail_threads',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    account: () => p.manyToOne(Account).mapToPk().deleteRule('cascade'),
    providerThreadId: p.string(),
    subject: p.text().default(''),
    snippet: p.text().default(''),
    lastMessageAt: p.datetime().nullable(),
    /** The sender of the message that dates the thread (lastMessageAt), for the list. */
    lastFromName: p.text().default(''),
    lastFromAddress: p.text().default(''),
    isUnread: p.boolean().default(false),
    inInbox: p.boolean().default(false),
    /** The thread's latest message (any label), whose analysis the list shows; kept by refreshThreads. */
    latestMessage: p.uuid().nullable(),
    createdAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
  uniques: [{ name: 'mail_threads_account_provider_unique', properties: ['account', 'providerThreadId'] }],
  indexes: [
    {
      name: 'mail_threads_inbox_list_idx',
      expression:
        'create index "mail_threads_inbox_list_idx" on "mail_threads" ("account_id", "last_message_at" desc, "id" desc) where "in_inbox"',
    },
  ],
});
export class MailThread extends MailThreadSchema.class {}
MailThreadSchema.setClass(MailThread);
