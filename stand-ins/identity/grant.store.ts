/**
 * The identity stand-in's state: who consents next, authorization codes, grants with their
 * refresh and access tokens, pending faults and the call log. The endpoints (oauth.routes.ts,
 * token.endpoint.ts) and the control API (identity.stand-in.ts) read and change it here.
 */
import { random } from './id-token.jwt.ts';
import {
  DEFAULT_STAND_IN_USER,
  type IdentityCalls,
  type IdentityFault,
  type IdentityFaultEndpoint,
  type StandInUser,
} from './identity.types.ts';

export const CODE_TTL_MS = 60_000;
export const ACCESS_TOKEN_TTL_S = 3599;
export const REVOKED_DESCRIPTION = 'Token has been expired or revoked.';

export interface CodeRecord {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  user: StandInUser;
  scope: string;
  nonce?: string;
  issueRefreshToken: boolean;
  issuedAt: number;
  used: boolean;
}

export interface GrantRecord {
  id: string;
  user: StandInUser;
  clientId: string;
  scope: string;
  refreshToken: string | null;
  createdAt: number;
  revoked: boolean;
}

export interface AccessRecord {
  grantId: string;
  expiresAt: number;
  forcedExpired: boolean;
}

export interface PendingFault extends IdentityFault {
  remaining: number;
}

export const normalizeScope = (scope: string) => scope.split(/\s+/).filter(Boolean).join(' ');
export const scopeHas = (scope: string, s: string) => scope.split(' ').includes(s);
export const copyUser = (u: StandInUser): StandInUser => ({
  sub: u.sub,
  email: u.email,
  email_verified: u.email_verified ?? true,
});

export class IdentityState {
  readonly knownUsers = new Map<string, StandInUser>();
  currentUser: StandInUser;
  denyCount = 0;
  grantedScopeOverride: string | null = null;

  readonly codes = new Map<string, CodeRecord>();
  readonly grantsById = new Map<string, GrantRecord>();
  readonly refreshIndex = new Map<string, string>(); // refresh token -> grant id
  readonly accessTokens = new Map<string, AccessRecord>();
  readonly faults: Record<IdentityFaultEndpoint, PendingFault[]> = { token: [], userinfo: [], revoke: [] };

  readonly authorizeRequests: Record<string, string>[] = [];
  readonly calls: IdentityCalls = { authorize: 0, token: 0, userinfo: 0, revoke: 0, tokenRequests: [] };

  /** Set once the server listens; the id_token issuer and the discovery document's base. */
  baseUrl = '';

  readonly clientId: string;
  readonly clientSecret: string;
  readonly now: () => number;

  constructor(clientId: string, clientSecret: string, now: () => number, users: StandInUser[] | undefined) {
    this.clientId = clientId;
    this.clientSecret = clientSecret;
    this.now = now;
    for (const u of users ?? []) this.knownUsers.set(u.sub, copyUser(u));
    this.currentUser = copyUser(users?.[0] ?? DEFAULT_STAND_IN_USER);
    this.knownUsers.set(this.currentUser.sub, this.currentUser);
  }

  liveAccess(token: string): { record: AccessRecord; grant: GrantRecord } | null {
    const record = this.accessTokens.get(token);
    if (!record || record.forcedExpired || this.now() >= record.expiresAt) return null;
    const grant = this.grantsById.get(record.grantId);
    if (!grant || grant.revoked) return null;
    return { record, grant };
  }

  issueAccessToken(grant: GrantRecord): string {
    const token = `ya29.${random(48)}`;
    this.accessTokens.set(token, {
      grantId: grant.id,
      expiresAt: this.now() + ACCESS_TOKEN_TTL_S * 1000,
      forcedExpired: false,
    });
    return token;
  }

  revokeGrant(grant: GrantRecord): void {
    grant.revoked = true;
    if (grant.refreshToken) this.refreshIndex.delete(grant.refreshToken);
    for (const [t, r] of this.accessTokens) if (r.grantId === grant.id) this.accessTokens.delete(t);
  }

  hasOfflineGrant(sub: string, client: string): boolean {
    return [...this.grantsById.values()].some(
      (g) => !g.revoked && g.refreshToken !== null && g.user.sub === sub && g.clientId === client,
    );
  }

  takeFault(endpoint: IdentityFaultEndpoint): PendingFault | null {
    const queue = this.faults[endpoint];
    const fault = queue[0];
    if (!fault) return null;
    fault.remaining -= 1;
    if (fault.remaining <= 0) queue.shift();
    return fault;
  }
}
