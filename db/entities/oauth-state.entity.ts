/** A pending OAuth authorization: single use, short-lived, bound to the browser that started it. */
import { defineEntity, p } from '@mikro-orm/core';

export const OAuthStateSchema = defineEntity({
  name: 'OAuthState',
  tableName: 'oauth_states',
  properties: {
    /** sha256 of the state value sent to the provider. */
    id: p.string().primary(),
    /** sha256 of the pre-auth cookie value of the browser that asked. */
    browserHash: p.string(),
    codeVerifier: p.string(),
    expiresAt: p.datetime().index(),
    createdAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date()),
  },
});
export class OAuthState extends OAuthStateSchema.class {}
OAuthStateSchema.setClass(OAuthState);
