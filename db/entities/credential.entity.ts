/** Provider tokens of an account, encrypted at rest (AES-256-GCM; keyId names the key used). */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const CredentialSchema = defineEntity({
  name: 'Credential',
  tableName: 'credentials',
  properties: {
    account: () => p.oneToOne(Account).mapToPk().primary().deleteRule('cascade'),
    keyId: p.string(),
    refreshTokenEnc: p.text(),
    accessTokenEnc: p.text().nullable(),
    accessTokenExpiresAt: p.datetime().nullable(),
    scope: p.text(),
    updatedAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export class Credential extends CredentialSchema.class {}
CredentialSchema.setClass(Credential);
