/**
 * Stand-in for a Google-like OAuth 2.0 / OpenID Connect identity provider.
 *
 * Implements the authorization-code flow with PKCE (S256 only) the way the service uses it:
 *   GET  /o/oauth2/v2/auth          consent (auto-consents as the "current user", 302 back)
 *   POST /token                     authorization_code and refresh_token grants
 *   GET  /v1/userinfo               {sub, email, email_verified} for a Bearer access token
 *   POST /revoke                    revokes the user's whole grant to the client, by any of its tokens
 *   GET  /oauth2/v3/certs           JWKS for the RS256 id_token
 *   GET  /.well-known/openid-configuration
 *
 * Plain node:http on 127.0.0.1, random port. Tokens come from crypto.randomBytes.
 * Used by integration tests and by `npm run demo`.
 *
 * Why not oauth2-mock-server (evaluated, 9.3.0): it keeps no authorization state (codes,
 * refresh tokens, revocations), has no client authentication, and its hooks are synchronous mutators of an already-decided JSON
 * response, so revocation by form field, invalid_grant on PKCE failure, hanging and non-JSON
 * fault bodies cannot be expressed with it.
 *
 * This module starts the server and holds the control API; the state is in identity/grant.store.ts,
 * the endpoints in identity/oauth.routes.ts and identity/token.endpoint.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { copyUser, IdentityState, normalizeScope } from './identity/grant.store.ts';
import { HttpError, sendJson } from './identity/http.wire.ts';
import type { IdentityStandIn, IdentityStandInOptions } from './identity/identity.types.ts';
import { PATHS, route } from './identity/oauth.routes.ts';

export {
  DEFAULT_STAND_IN_USER,
  type AccessTokenInfo,
  type IdentityCalls,
  type IdentityFault,
  type IdentityFaultEndpoint,
  type IdentityStandIn,
  type IdentityStandInOptions,
  type StandInGrant,
  type StandInUser,
} from './identity/identity.types.ts';

export async function startIdentityStandIn(opts: IdentityStandInOptions = {}): Promise<IdentityStandIn> {
  const clientId = opts.clientId ?? 'test-client-id';
  const clientSecret = opts.clientSecret ?? 'test-client-secret';
  const state = new IdentityState(clientId, clientSecret, opts.now ?? Date.now, opts.users);

  const server: Server = createServer((req, res) => {
    route(state, req, res).catch((err: unknown) => {
      if (res.headersSent || res.destroyed) return;
      if (err instanceof HttpError) return sendJson(res, err.status, err.body, err.headers);
      sendJson(res, 500, { error: 'server_error', error_description: String(err) });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  state.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const baseUrl = state.baseUrl;

  let closing: Promise<void> | undefined;

  return {
    url: baseUrl,
    authUrl: baseUrl + PATHS.auth,
    tokenUrl: baseUrl + PATHS.token,
    userinfoUrl: baseUrl + PATHS.userinfo,
    revokeUrl: baseUrl + PATHS.revoke,
    jwksUrl: baseUrl + PATHS.jwks,
    clientId,
    clientSecret,
    authorizeRequests: state.authorizeRequests,
    calls: state.calls,

    get currentUser() {
      return copyUser(state.currentUser);
    },
    setCurrentUser(user) {
      if (typeof user === 'string') {
        const found = [...state.knownUsers.values()].find((u) => u.sub === user || u.email === user);
        if (!found) throw new Error(`identity stand-in: unknown user ${user}`);
        state.currentUser = copyUser(found);
      } else {
        state.currentUser = copyUser(user);
        state.knownUsers.set(state.currentUser.sub, state.currentUser);
      }
    },
    denyNextConsent(times = 1) {
      state.denyCount = times;
    },
    setGrantedScope(scope) {
      state.grantedScopeOverride = scope === null ? null : normalizeScope(scope);
    },

    accessTokenOwner(token) {
      const live = state.liveAccess(token);
      return live ? copyUser(live.grant.user) : null;
    },
    accessTokenInfo(token) {
      const live = state.liveAccess(token);
      if (!live) return null;
      return {
        user: copyUser(live.grant.user),
        scope: live.grant.scope,
        clientId: live.grant.clientId,
        grantId: live.grant.id,
        expiresAt: live.record.expiresAt,
      };
    },
    expireAccessTokens() {
      for (const record of state.accessTokens.values()) record.forcedExpired = true;
    },
    revokeUser(sub) {
      let n = 0;
      for (const g of state.grantsById.values()) {
        if (!g.revoked && g.user.sub === sub) {
          state.revokeGrant(g);
          n += 1;
        }
      }
      return n;
    },
    grants(sub) {
      return [...state.grantsById.values()]
        .filter((g) => !g.revoked && (sub === undefined || g.user.sub === sub))
        .map((g) => ({
          id: g.id,
          sub: g.user.sub,
          email: g.user.email,
          clientId: g.clientId,
          scope: g.scope,
          refreshToken: g.refreshToken,
          createdAt: g.createdAt,
          liveAccessTokens: [...state.accessTokens.keys()].filter((t) => state.liveAccess(t)?.grant === g).length,
        }));
    },

    injectFault(fault) {
      const times = fault.times ?? 1;
      if (!(times > 0)) throw new Error('identity stand-in: fault.times must be > 0');
      if (!Number.isInteger(fault.status) || (fault.status !== 0 && (fault.status < 100 || fault.status > 599))) {
        throw new Error(`identity stand-in: invalid fault status ${fault.status}`);
      }
      state.faults[fault.endpoint].push({ ...fault, remaining: times });
    },
    clearFaults() {
      for (const queue of Object.values(state.faults)) queue.length = 0;
    },
    resetCounters() {
      state.calls.authorize = 0;
      state.calls.token = 0;
      state.calls.userinfo = 0;
      state.calls.revoke = 0;
      state.calls.tokenRequests.length = 0;
      state.authorizeRequests.length = 0;
    },
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
