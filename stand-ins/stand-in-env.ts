/** The service's environment variables that point its real clients at the stand-ins. */
import type { IdentityStandIn } from './identity.stand-in.ts';

export function identityEnv(identity: IdentityStandIn): Record<string, string> {
  return {
    GOOGLE_CLIENT_ID: identity.clientId,
    GOOGLE_CLIENT_SECRET: identity.clientSecret,
    GOOGLE_AUTH_URL: identity.authUrl,
    GOOGLE_TOKEN_URL: identity.tokenUrl,
    GOOGLE_USERINFO_URL: identity.userinfoUrl,
    GOOGLE_REVOKE_URL: identity.revokeUrl,
  };
}
