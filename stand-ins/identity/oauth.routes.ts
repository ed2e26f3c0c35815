/**
 * The identity stand-in's HTTP routing and its consent, userinfo, revocation, JWKS and discovery
 * endpoints (the token endpoint is in token.endpoint.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { copyUser, normalizeScope, scopeHas, type IdentityState } from './grant.store.ts';
import { applyFault, HttpError, isForm, missing, readBody, sendErrorPage, sendJson } from './http.wire.ts';
import { random, signingKey } from './id-token.jwt.ts';
import { handleToken } from './token.endpoint.ts';

export const PATHS = {
  auth: '/o/oauth2/v2/auth',
  token: '/token',
  userinfo: '/v1/userinfo',
  revoke: '/revoke',
  jwks: '/oauth2/v3/certs',
  discovery: '/.well-known/openid-configuration',
} as const;

function handleAuthorize(state: IdentityState, req: IncomingMessage, res: ServerResponse, url: URL) {
  state.calls.authorize += 1;
  const q = Object.fromEntries(url.searchParams);
  state.authorizeRequests.push(q);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET' }).end();
    return;
  }
  if (!q['client_id']) return sendErrorPage(res, 'invalid_request', 'Missing required parameter: client_id');
  if (q['client_id'] !== state.clientId) return sendErrorPage(res, 'invalid_client', 'The OAuth client was not found.');
  const redirectUri = q['redirect_uri'];
  if (!redirectUri) return sendErrorPage(res, 'invalid_request', 'Missing required parameter: redirect_uri');
  let redirect: URL;
  try {
    redirect = new URL(redirectUri);
  } catch {
    return sendErrorPage(res, 'redirect_uri_mismatch', 'redirect_uri is not an absolute URL.');
  }
  if ((redirect.protocol !== 'http:' && redirect.protocol !== 'https:') || redirect.hash) {
    return sendErrorPage(res, 'redirect_uri_mismatch', 'redirect_uri must be an http(s) URL without a fragment.');
  }
  if (q['response_type'] !== 'code') {
    return sendErrorPage(res, 'unsupported_response_type', 'Only response_type=code is supported.');
  }
  const scope = normalizeScope(q['scope'] ?? '');
  if (!scope) return sendErrorPage(res, 'invalid_request', 'Missing required parameter: scope');
  const challenge = q['code_challenge'];
  if (!challenge) return sendErrorPage(res, 'invalid_request', 'Missing required parameter: code_challenge');
  if (q['code_challenge_method'] !== 'S256') {
    return sendErrorPage(res, 'invalid_request', 'code_challenge_method must be S256.');
  }
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
    return sendErrorPage(res, 'invalid_request', 'code_challenge must be a base64url SHA-256 digest (43 characters).');
  }

  const oauthState = q['state'];
  if (state.denyCount > 0) {
    state.denyCount -= 1;
    redirect.searchParams.set('error', 'access_denied');
    if (oauthState !== undefined) redirect.searchParams.set('state', oauthState);
    res.writeHead(302, { location: redirect.href }).end();
    return;
  }

  const user = copyUser(state.currentUser);
  const grantedScope = state.grantedScopeOverride ?? scope;
  // Google returns a refresh token only with access_type=offline, and only while the user has no
  // live offline grant for the client, unless prompt=consent forces a new one.
  const offline = q['access_type'] === 'offline';
  const forcedConsent = (q['prompt'] ?? '').split(/\s+/).includes('consent');
  const code = `4/0${random(48)}`;
  state.codes.set(code, {
    clientId: state.clientId,
    redirectUri,
    codeChallenge: challenge,
    user,
    scope: grantedScope,
    ...(q['nonce'] !== undefined ? { nonce: q['nonce'] } : {}),
    issueRefreshToken: offline && (forcedConsent || !state.hasOfflineGrant(user.sub, state.clientId)),
    issuedAt: state.now(),
    used: false,
  });
  redirect.searchParams.set('code', code);
  if (oauthState !== undefined) redirect.searchParams.set('state', oauthState);
  redirect.searchParams.set('scope', grantedScope);
  res.writeHead(302, { location: redirect.href }).end();
}

async function handleUserinfo(state: IdentityState, req: IncomingMessage, res: ServerResponse) {
  state.calls.userinfo += 1;
  await readBody(req);
  const fault = state.takeFault('userinfo');
  if (fault) return applyFault(res, fault);
  if (req.method !== 'GET' && req.method !== 'POST') {
    throw new HttpError(405, { error: 'invalid_request', error_description: 'Use GET.' }, { allow: 'GET, POST' });
  }
  const m = /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  const live = m ? state.liveAccess(m[1]!) : null;
  if (!live) {
    throw new HttpError(
      401,
      { error: 'invalid_token', error_description: 'Invalid Credentials' },
      { 'www-authenticate': m ? 'Bearer error="invalid_token"' : 'Bearer' },
    );
  }
  const { user, scope } = live.grant;
  const emailGranted = scopeHas(scope, 'email') || scopeHas(scope, 'https://www.googleapis.com/auth/userinfo.email');
  sendJson(res, 200, {
    sub: user.sub,
    ...(emailGranted ? { email: user.email, email_verified: user.email_verified ?? true } : {}),
  });
}

async function handleRevoke(state: IdentityState, req: IncomingMessage, res: ServerResponse, url: URL) {
  state.calls.revoke += 1;
  const raw = await readBody(req);
  const fault = state.takeFault('revoke');
  if (fault) return applyFault(res, fault);
  if (req.method !== 'POST')
    throw new HttpError(405, { error: 'invalid_request', error_description: 'Use POST.' }, { allow: 'POST' });
  const token = (isForm(req) ? new URLSearchParams(raw).get('token') : null) ?? url.searchParams.get('token');
  if (!token) throw missing('token');
  const grantId = state.refreshIndex.get(token) ?? state.liveAccess(token)?.grant.id ?? undefined;
  const grant = grantId ? state.grantsById.get(grantId) : undefined;
  if (!grant || grant.revoked)
    throw new HttpError(400, { error: 'invalid_token', error_description: 'Token expired or revoked' });
  // As Google does: revoking one token revokes the user's whole grant to this client.
  for (const g of state.grantsById.values()) {
    if (!g.revoked && g.user.sub === grant.user.sub && g.clientId === grant.clientId) state.revokeGrant(g);
  }
  sendJson(res, 200, {});
}

export async function route(state: IdentityState, req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', state.baseUrl || 'http://127.0.0.1');
  switch (url.pathname) {
    case PATHS.auth:
      return handleAuthorize(state, req, res, url);
    case PATHS.token:
      return handleToken(state, req, res);
    case PATHS.userinfo:
      return handleUserinfo(state, req, res);
    case PATHS.revoke:
      return handleRevoke(state, req, res, url);
    case PATHS.jwks:
      return sendJson(res, 200, { keys: [(await signingKey()).jwk] });
    case PATHS.discovery:
      return sendJson(res, 200, {
        issuer: state.baseUrl,
        authorization_endpoint: state.baseUrl + PATHS.auth,
        token_endpoint: state.baseUrl + PATHS.token,
        userinfo_endpoint: state.baseUrl + PATHS.userinfo,
        revocation_endpoint: state.baseUrl + PATHS.revoke,
        jwks_uri: state.baseUrl + PATHS.jwks,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
        id_token_signing_alg_values_supported: ['RS256'],
        subject_types_supported: ['public'],
      });
    default:
      return sendJson(res, 404, { error: 'not_found', error_description: `No route for ${url.pathname}` });
  }
}
