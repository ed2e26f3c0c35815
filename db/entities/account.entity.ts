/** A signed-in user, keyed by the identity provider's `sub`; also holds the account's settings. */
import { defineEntity, p } from '@mikro-orm/core';

export const AccountSchema = defineEntity({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    sub: p.string().unique(),
    email: p.string(),
    needsReconnect: p.boolean().default(false),
    /** When disconnect ended every session: no session signed in before it may be saved again. */
    sessionsRevokedAt: p.datetime().nullable(),
    signature: p.text().nullable(),
    responseStyle: p.json<{ tone?: string; length?: string; language?: string; preferredTone?: string }>().nullable(),
    /** Analyse new inbox threads on arrival (PATCH /api/settings `autoTriage`). */
    autoTriage: p.boolean().default(false),
    /** Mail sent before this is not triaged on arrival (three days before the setting was turned on). */
    autoTriageFrom: p.datetime().nullable(),
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
  // The notification intake finds an account by lower(email).
  indexes: [
    {
      name: 'accounts_email_lower_idx',
      expression: 'create index "accounts_email_lower_idx" on "accounts" (lower("email"))',
    },
  ],
});
export class Account extends AccountSchema.class {}
AccountSchema.setClass(Account);
