/**
 * AI token ledger: a row is reserved before a provider call and settled with the usage the
 * provider reports, so the budget check sums settled and in-flight tokens atomically.
 */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const AiUsageSchema = defineEntity({
  name: 'AiUsage',
  tableName: 'ai_usage',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    account: () => p.manyToOne(Account).mapToPk().deleteRule('cascade'),
    operation: p.string(),
    model: p.string(),
    /** reserved | settled */
    state: p.string(),
    tokens: p.integer(),
    promptTokens: p.integer().default(0),
    completionTokens: p.integer().default(0),
    createdAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date()),
  },
  indexes: [{ name: 'ai_usage_account_created_idx', properties: ['account', 'createdAt'] }],
});
export class AiUsage extends AiUsageSchema.class {}
AiUsageSchema.setClass(AiUsage);
