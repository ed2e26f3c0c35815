/**
 * A message a sync could not fetch or read (the provider failed for it alone, or its answer
 * did not parse). The first failure fails that sync and is recorded here; at the second the
 * message is set aside and the account's sync moves on without it. Set-aside messages are
 * tried again on their own (`retryAfter`, doubling up to six hours); the record goes when the
 * message is stored or the provider no longer has it.
 */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const MailSetAsideSchema = defineEntity({
  name: 'MailSetAside',
  tableName: 'mail_set_aside',
  properties: {
    account: () => p.manyToOne(Account).mapToPk().primary().deleteRule('cascade'),
    providerMessageId: p.string().primary(),
    reason: p.string().length(64),
    attempts: p.integer().default(1),
    firstSeenAt: p.datetime().defaultRaw('now()'),
    retryAfter: p.datetime(),
  },
});
export class MailSetAside extends MailSetAsideSchema.class {}
MailSetAsideSchema.setClass(MailSetAside);
