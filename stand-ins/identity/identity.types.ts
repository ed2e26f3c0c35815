/**
 * The identity stand-in's public types: its users, grants and fault specs, the control API a
 * test drives it with, and its start options.
 */
export interface StandInUser {
  sub: string;
  email: string;
  /** Defaults to true when omitted. */
  email_verified?: boolean;
}

export type IdentityFaultEndpoint = 'token' | 'userinfo' | 'revoke';

export interface IdentityFault {
  endpoint: IdentityFaultEndpoint;
  /**
   * HTTP status to answer with. 0 means "no HTTP answer": with `hang: true` the request is
   * never answered; without it the connection is destroyed (the client sees a network error).
   */
  status: number;
  /** Sent verbatim (may be non-JSON garbage). Default: a JSON OAuth error body. */
  body?: string;
  /** Content-Type of the fault answer. Default 'application/json; charset=utf-8' (even for garbage). */
  contentType?: string;
  /** Extra response headers, e.g. { 'retry-after': '1' }. */
  headers?: Record<string, string>;
  /** How many consecutive requests to the endpoint get this fault. Default 1; Infinity allowed. */
  times?: number;
  /** Never answer (the socket stays open until the client gives up or close() is called). */
  hang?: boolean;
}

export interface IdentityCalls {
  authorize: number;
  token: number;
  userinfo: number;
  revoke: number;
  /** Form params of every POST to the token endpoint (faulted ones included), in order. */
  tokenRequests: Record<string, string>[];
}

export interface StandInGrant {
  id: string;
  sub: string;
  email: string;
  clientId: string;
  scope: string;
  /** null when the consent did not yield a refresh token (no access_type=offline, or re-consent without prompt=consent). */
  refreshToken: string | null;
  /** Epoch ms (stand-in clock). */
  createdAt: number;
  /** Access tokens of this grant that are currently valid. */
  liveAccessTokens: number;
}

export interface AccessTokenInfo {
  user: StandInUser;
  scope: string;
  clientId: string;
  grantId: string;
  /** Epoch ms (stand-in clock). */
  expiresAt: number;
}

export interface IdentityStandIn {
  /** Base URL (also the id_token issuer), e.g. http://127.0.0.1:43117 */
  readonly url: string;
  readonly authUrl: string;
  readonly tokenUrl: string;
  readonly userinfoUrl: string;
  readonly revokeUrl: string;
  readonly jwksUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Query params of every request to the consent endpoint (rejected ones included), in order. */
  readonly authorizeRequests: Record<string, string>[];
  /** Live counters; resetCounters() clears them in place. */
  readonly calls: IdentityCalls;

  /** Who consents next. A string looks up a known user by sub or email (throws if unknown). */
  setCurrentUser(user: StandInUser | string): void;
  readonly currentUser: StandInUser;
  /** The next `times` valid consent requests are denied (302 with error=access_denied). */
  denyNextConsent(times?: number): void;
  /** Scope granted at the next consents (sticky); null = grant what was requested. */
  setGrantedScope(scope: string | null): void;

  /** Valid (issued, unexpired, unrevoked) access token -> its user; else null. */
  accessTokenOwner(token: string): StandInUser | null;
  /** Like accessTokenOwner, plus the grant's scope and client (e.g. for a Gmail scope check). */
  accessTokenInfo(token: string): AccessTokenInfo | null;
  /** Every access token issued so far stops working (refresh tokens are unaffected). */
  expireAccessTokens(): void;
  /** Revokes every live grant of the user (as if the user removed the app's access). Returns how many. */
  revokeUser(sub: string): number;
  /** Live (unrevoked) grants, optionally only those of one user. Snapshots. */
  grants(sub?: string): StandInGrant[];

  injectFault(fault: IdentityFault): void;
  clearFaults(): void;
  /** Zeroes `calls`, empties `calls.tokenRequests` and `authorizeRequests` (in place). */
  resetCounters(): void;
  /** Stops listening and destroys every open socket (hung requests included). Idempotent. */
  close(): Promise<void>;
}

export interface IdentityStandInOptions {
  clientId?: string;
  clientSecret?: string;
  /** Known users; the first one is the initial current user. */
  users?: StandInUser[];
  /** Clock in epoch ms (default Date.now); lets tests age codes and tokens without waiting. */
  now?: () => number;
}

export const DEFAULT_STAND_IN_USER: Readonly<StandInUser> = Object.freeze({
  sub: 'user-alice',
  email: 'alice@example.com',
  email_verified: true,
});
