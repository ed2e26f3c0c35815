/** Server-side session store for koa-session; the id is a hash of the cookie's key, never the key. */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const SessionSchema = defineEntity({
  name: 'Session',
  tableName: 'sessions',
  properties: {
    id: p.string().primary(),
    account: () => p.manyToOne(Account).mapToPk().nullable().deleteRule('cascade').index(),
    data: p.json<Record<string, unknown>>(),
    expiresAt: p.datetime().index(),
    createdAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date()),
  },
});
export class Session extends SessionSchema.class {}
SessionSchema.setClass(Session);
