/** The AI triage of a thread's latest message; one per message (unique), so concurrent calls converge. */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';
import { MailThread } from './mail-thread.entity.ts';
import { MailMessage } from './mail-message.entity.ts';

export const AnalysisSchema = defineEntity({
  name: 'Analysis',
  tableName: 'analyses',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    account: () => p.manyToOne(Account).mapToPk().deleteRule('cascade').index(),
    thread: () => p.manyToOne(MailThread).mapToPk().deleteRule('cascade').index(),
    message: () => p.manyToOne(MailMessage).mapToPk().deleteRule('cascade').unique(),
    priority: p.string(),
    replyStatus: p.string(),
    confidence: p.double(),
    reason: p.text(),
    suggestedAction: p.text(),
    model: p.string(),
    /** Set by the user's correction, whose values then stand in priority and replyStatus; the model's are kept here. */
    correctedAt: p.datetime().nullable(),
    modelPriority: p.string().nullable(),
    modelReplyStatus: p.string().nullable(),
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
});
export class Analysis extends AnalysisSchema.class {}
AnalysisSchema.setClass(Analysis);
