/** One provider message: metadata from sync; bodies and attachment metadata once the thread is opened. */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';
import { MailThread } from './mail-thread.entity.ts';

export interface AttachmentMeta {
  filename: string;
  mimeType: string;
  size: number;
}

export const MailMessageSchema = defineEntity({
  name: 'MailMessage',
  tableName: 'mail_messages',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    account: () => p.manyToOne(Account).mapToPk().deleteRule('cascade'),
    thread: () => p.manyToOne(MailThread).mapToPk().deleteRule('cascade'),
    providerMessageId: p.string(),
    fromName: p.text().default(''),
    fromAddress: p.text().default(''),
    subject: p.text().default(''),
    snippet: p.text().default(''),
    sentAt: p.datetime(),
    isUnread: p.boolean().default(false),
    inInbox: p.boolean().default(false),
    labelIds: p.array().default([]),
    /** Bulk mail by its headers (List-Unsubscribe, Precedence bulk/list/junk): never triaged on arrival. */
    isBulk: p.boolean().default(false),
    bodyText: p.text().nullable(),
    bodyHtml: p.text().nullable(),
    attachments: p.json<AttachmentMeta[]>().nullable(),
    bodyFetchedAt: p.datetime().nullable(),
    /** The sanitiser version (SANITIZER_VERSION) body_html was made with; an older one is refetched on open. */
    bodySanitizer: p.integer().nullable(),
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
  uniques: [{ name: 'mail_messages_account_provider_unique', properties: ['account', 'providerMessageId'] }],
  indexes: [{ name: 'mail_messages_thread_sent_idx', properties: ['thread', 'sentAt'] }],
});
export class MailMessage extends MailMessageSchema.class {}
MailMessageSchema.setClass(MailMessage);
