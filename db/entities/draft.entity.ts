/** A generated reply draft, kept so the user can come back to it. */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';
import { MailThread } from './mail-thread.entity.ts';
import { MailMessage } from './mail-message.entity.ts';

export const DraftSchema = defineEntity({
  name: 'Draft',
  tableName: 'drafts',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    account: () => p.manyToOne(Account).mapToPk().deleteRule('cascade').index(),
    thread: () => p.manyToOne(MailThread).mapToPk().deleteRule('cascade').index(),
    message: () => p.manyToOne(MailMessage).mapToPk().deleteRule('cascade'),
    subject: p.text(),
    body: p.text(),
    language: p.string(),
    options: p.json<Record<string, string>>(),
    model: p.string(),
    createdAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date()),
  },
});
export class Draft extends DraftSchema.class {}
DraftSchema.setClass(Draft);
