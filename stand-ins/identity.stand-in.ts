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
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash, generateKeyPair, randomBytes, sign as cryptoSign, type KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';

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

const PATHS = {
  auth: '/o/oauth2/v2/auth',
  token: '/token',
  userinfo: '/v1/userinfo',
  revoke: '/revoke',
  jwks: '/oauth2/v3/certs',
  discovery: '/.well-known/openid-configuration',
} as const;

const CODE_TTL_MS = 60_000;
const ACCESS_TOKEN_TTL_S = 3599;
const MAX_BODY_BYTES = 64 * 1024;
const REVOKED_DESCRIPTION = 'Token has been expired or revoked.';

interface CodeRecord {
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

interface GrantRecord {
  id: string;
  user: StandInUser;
  clientId: string;
  scope: string;
  refreshToken: string | null;
  createdAt: number;
  revoked: boolean;
}

interface AccessRecord {
  grantId: string;
  expiresAt: number;
  forcedExpired: boolean;
}

interface PendingFault extends IdentityFault {
  remaining: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(String(body['error'] ?? status));
  }
}

const random = (bytes = 32) => randomBytes(bytes).toString('base64url');
const normalizeScope = (scope: string) => scope.split(/\s+/).filter(Boolean).join(' ');
const scopeHas = (scope: string, s: string) => scope.split(' ').includes(s);
const copyUser = (u: StandInUser): StandInUser => ({ sub: u.sub, email: u.email, email_verified: u.email_verified ?? true });

// One RSA key per process for id_token signing, generated on first use (keygen is slow-ish).
let signingKeyPromise: Promise<{ privateKey: KeyObject; jwk: Record<string, unknown> }> | undefined;
function signingKey() {
  signingKeyPromise ??= new Promise((resolve, reject) => {
    generateKeyPair('rsa', { modulusLength: 2048 }, (err, publicKey, privateKey) => {
      if (err) return reject(err);
      const jwk = { ...publicKey.export({ format: 'jwk' }), kid: random(12), alg: 'RS256', use: 'sig' };
      resolve({ privateKey, jwk });
    });
  });
  return signingKeyPromise;
}

async function signJwt(payload: Record<string, unknown>): Promise<string> {
  const { privateKey, jwk } = await signingKey();
  const header = { alg: 'RS256', kid: jwk['kid'], typ: 'JWT' };
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${input}.${cryptoSign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, { error: 'invalid_request', error_description: 'Request body too large.' }));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const isForm = (req: IncomingMessage) =>
  (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    pragma: 'no-cache',
    ...headers,
  });
  res.end(text);
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function sendErrorPage(res: ServerResponse, error: string, description: string) {
  const html =
    `<!doctype html><html><head><meta charset="utf-8"><title>Error 400: ${escapeHtml(error)}</title></head>` +
    `<body><h1>Access blocked: this request is invalid</h1><p>Error 400: <b>${escapeHtml(error)}</b></p>` +
    `<p>${escapeHtml(description)}</p><p>(identity stand-in)</p></body></html>`;
  res.writeHead(400, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
  res.end(html);
}

function basicCredentials(req: IncomingMessage): { id: string; secret: string } | null {
  const m = /^basic\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return null;
  // RFC 6749 §2.3.1: both parts are form-urlencoded before base64; tolerate clients that skip it.
  const unescape = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  return { id: unescape(decoded.slice(0, i)), secret: unescape(decoded.slice(i + 1)) };
}

export async function startIdentityStandIn(opts: IdentityStandInOptions = {}): Promise<IdentityStandIn> {
  const clientId = opts.clientId ?? 'test-client-id';
  const clientSecret = opts.clientSecret ?? 'test-client-secret';
  const now = opts.now ?? Date.now;

  const knownUsers = new Map<string, StandInUser>();
  for (const u of opts.users ?? []) knownUsers.set(u.sub, copyUser(u));
  let currentUser = copyUser(opts.users?.[0] ?? DEFAULT_STAND_IN_USER);
  knownUsers.set(currentUser.sub, currentUser);

  let denyCount = 0;
  let grantedScopeOverride: string | null = null;

  const codes = new Map<string, CodeRecord>();
  const grantsById = new Map<string, GrantRecord>();
  const refreshIndex = new Map<string, string>(); // refresh token -> grant id
  const accessTokens = new Map<string, AccessRecord>();
  const faults: Record<IdentityFaultEndpoint, PendingFault[]> = { token: [], userinfo: [], revoke: [] };

  const authorizeRequests: Record<string, string>[] = [];
  const calls: IdentityCalls = { authorize: 0, token: 0, userinfo: 0, revoke: 0, tokenRequests: [] };

  let baseUrl = '';

  // ---------- state helpers ----------

  function liveAccess(token: string): { record: AccessRecord; grant: GrantRecord } | null {
    const record = accessTokens.get(token);
    if (!record || record.forcedExpired || now() >= record.expiresAt) return null;
    const grant = grantsById.get(record.grantId);
    if (!grant || grant.revoked) return null;
    return { record, grant };
  }

  function issueAccessToken(grant: GrantRecord): string {
    const token = `ya29.${random(48)}`;
    accessTokens.set(token, { grantId: grant.id, expiresAt: now() + ACCESS_TOKEN_TTL_S * 1000, forcedExpired: false });
    return token;
  }

  function revokeGrant(grant: GrantRecord) {
    grant.revoked = true;
    if (grant.refreshToken) refreshIndex.delete(grant.refreshToken);
    for (const [t, r] of accessTokens) if (r.grantId === grant.id) accessTokens.delete(t);
  }

  const hasOfflineGrant = (sub: string, client: string) =>
    [...grantsById.values()].some((g) => !g.revoked && g.refreshToken !== null && g.user.sub === sub && g.clientId === client);

  function takeFault(endpoint: IdentityFaultEndpoint): PendingFault | null {
    const queue = faults[endpoint];
    const fault = queue[0];
    if (!fault) return null;
    fault.remaining -= 1;
    if (fault.remaining <= 0) queue.shift();
    return fault;
  }

  /** Answers with the fault. Returns without answering for hang (the socket is destroyed on close()). */
  function applyFault(res: ServerResponse, fault: PendingFault) {
    if (fault.hang) return;
    if (fault.status === 0) {
      res.socket?.destroy();
      return;
    }
    const body =
      fault.body ??
      JSON.stringify({
        error: fault.status >= 500 ? 'server_error' : 'invalid_request',
        error_description: `Injected fault (status ${fault.status}).`,
      });
    res.writeHead(fault.status, {
      'content-type': fault.contentType ?? 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      ...fault.headers,
    });
    res.end(body);
  }

  // ---------- endpoints ----------

  function handleAuthorize(req: IncomingMessage, res: ServerResponse, url: URL) {
    calls.authorize += 1;
    const q = Object.fromEntries(url.searchParams);
    authorizeRequests.push(q);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    if (!q['client_id']) return sendErrorPage(res, 'invalid_request', 'Missing required parameter: client_id');
    if (q['client_id'] !== clientId) return sendErrorPage(res, 'invalid_client', 'The OAuth client was not found.');
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

    const state = q['state'];
    if (denyCount > 0) {
      denyCount -= 1;
      redirect.searchParams.set('error', 'access_denied');
      if (state !== undefined) redirect.searchParams.set('state', state);
      res.writeHead(302, { location: redirect.href }).end();
      return;
    }

    const user = copyUser(currentUser);
    const grantedScope = grantedScopeOverride ?? scope;
    // Google returns a refresh token only with access_type=offline, and only while the user has no
    // live offline grant for the client, unless prompt=consent forces a new one.
    const offline = q['access_type'] === 'offline';
    const forcedConsent = (q['prompt'] ?? '').split(/\s+/).includes('consent');
    const code = `4/0${random(48)}`;
    codes.set(code, {
      clientId,
      redirectUri,
      codeChallenge: challenge,
      user,
      scope: grantedScope,
      ...(q['nonce'] !== undefined ? { nonce: q['nonce'] } : {}),
      issueRefreshToken: offline && (forcedConsent || !hasOfflineGrant(user.sub, clientId)),
      issuedAt: now(),
      used: false,
    });
    redirect.searchParams.set('code', code);
    if (state !== undefined) redirect.searchParams.set('state', state);
    redirect.searchParams.set('scope', grantedScope);
    res.writeHead(302, { location: redirect.href }).end();
  }

  function authenticateClient(req: IncomingMessage, form: Record<string, string>) {
    const basic = basicCredentials(req);
    const id = basic?.id ?? form['client_id'];
    const secret = basic?.secret ?? form['client_secret'];
    const unauthorized = (description: string) =>
      new HttpError(
        401,
        { error: 'invalid_client', error_description: description },
        basic ? { 'www-authenticate': 'Basic realm="identity-stand-in"' } : {},
      );
    if (!id) throw unauthorized('The OAuth client was not found.');
    if (basic && form['client_id'] !== undefined && form['client_id'] !== basic.id) {
      throw unauthorized('client_id in the body does not match the Authorization header.');
    }
    if (basic && form['client_secret'] !== undefined && form['client_secret'] !== basic.secret) {
      throw unauthorized('client_secret in the body does not match the Authorization header.');
    }
    if (id !== clientId) throw unauthorized('The OAuth client was not found.');
    if (secret !== clientSecret) throw unauthorized('Unauthorized');
  }

  const invalidGrant = (description: string) =>
    new HttpError(400, { error: 'invalid_grant', error_description: description });
  const missing = (name: string) =>
    new HttpError(400, { error: 'invalid_request', error_description: `Missing required parameter: ${name}` });

  async function exchangeCode(form: Record<string, string>): Promise<Record<string, unknown>> {
    const code = form['code'];
    if (!code) throw missing('code');
    if (!form['redirect_uri']) throw missing('redirect_uri');
    const record = codes.get(code);
    if (!record) throw invalidGrant('Malformed auth code.');
    if (record.used) throw invalidGrant('Authorization code was already redeemed.');
    if (now() - record.issuedAt > CODE_TTL_MS) throw invalidGrant('Authorization code has expired.');
    if (record.redirectUri !== form['redirect_uri']) throw invalidGrant('redirect_uri does not match the authorization request.');
    const verifier = form['code_verifier'];
    if (!verifier) throw invalidGrant('Missing code verifier.');
    if (!/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) throw invalidGrant('Invalid code verifier.');
    if (createHash('sha256').update(verifier).digest('base64url') !== record.codeChallenge) {
      throw invalidGrant('Invalid code verifier.');
    }
    // Only a successful redemption consumes the code.
    record.used = true;

    const grant: GrantRecord = {
      id: random(12),
      user: record.user,
      clientId: record.clientId,
      scope: record.scope,
      refreshToken: record.issueRefreshToken ? `1//0${random(48)}` : null,
      createdAt: now(),
      revoked: false,
    };
    grantsById.set(grant.id, grant);
    if (grant.refreshToken) refreshIndex.set(grant.refreshToken, grant.id);

    const body: Record<string, unknown> = {
      access_token: issueAccessToken(grant),
      expires_in: ACCESS_TOKEN_TTL_S,
      ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {}),
      scope: grant.scope,
      token_type: 'Bearer',
    };
    if (scopeHas(grant.scope, 'openid')) {
      const iat = Math.floor(now() / 1000);
      body['id_token'] = await signJwt({
        iss: baseUrl,
        azp: grant.clientId,
        aud: grant.clientId,
        sub: grant.user.sub,
        ...(scopeHas(grant.scope, 'email') ? { email: grant.user.email, email_verified: grant.user.email_verified ?? true } : {}),
        ...(record.nonce !== undefined ? { nonce: record.nonce } : {}),
        iat,
        exp: iat + ACCESS_TOKEN_TTL_S,
      });
    }
    return body;
  }

  function refresh(form: Record<string, string>): Record<string, unknown> {
    const refreshToken = form['refresh_token'];
    if (!refreshToken) throw missing('refresh_token');
    const grant = grantsById.get(refreshIndex.get(refreshToken) ?? '');
    if (!grant || grant.revoked) throw invalidGrant(REVOKED_DESCRIPTION);
    return { access_token: issueAccessToken(grant), expires_in: ACCESS_TOKEN_TTL_S, scope: grant.scope, token_type: 'Bearer' };
  }

  async function handleToken(req: IncomingMessage, res: ServerResponse) {
    calls.token += 1;
    const raw = await readBody(req);
    const form = isForm(req) ? Object.fromEntries(new URLSearchParams(raw)) : {};
    if (req.method === 'POST') calls.tokenRequests.push({ ...form });
    const fault = takeFault('token');
    if (fault) return applyFault(res, fault);

    if (req.method !== 'POST') throw new HttpError(405, { error: 'invalid_request', error_description: 'Use POST.' }, { allow: 'POST' });
    if (!isForm(req)) {
      throw new HttpError(400, { error: 'invalid_request', error_description: 'Content-Type must be application/x-www-form-urlencoded.' });
    }
    authenticateClient(req, form);
    const grantType = form['grant_type'];
    if (!grantType) throw missing('grant_type');
    let body: Record<string, unknown>;
    if (grantType === 'authorization_code') body = await exchangeCode(form);
    else if (grantType === 'refresh_token') body = refresh(form);
    else throw new HttpError(400, { error: 'unsupported_grant_type', error_description: `Invalid grant_type: ${grantType}` });
    sendJson(res, 200, body);
  }

  async function handleUserinfo(req: IncomingMessage, res: ServerResponse) {
    calls.userinfo += 1;
    await readBody(req);
    const fault = takeFault('userinfo');
    if (fault) return applyFault(res, fault);
    if (req.method !== 'GET' && req.method !== 'POST') {
      throw new HttpError(405, { error: 'invalid_request', error_description: 'Use GET.' }, { allow: 'GET, POST' });
    }
    const m = /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    const live = m ? liveAccess(m[1]!) : null;
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

  async function handleRevoke(req: IncomingMessage, res: ServerResponse, url: URL) {
    calls.revoke += 1;
    const raw = await readBody(req);
    const fault = takeFault('revoke');
    if (fault) return applyFault(res, fault);
    if (req.method !== 'POST') throw new HttpError(405, { error: 'invalid_request', error_description: 'Use POST.' }, { allow: 'POST' });
    const token = (isForm(req) ? new URLSearchParams(raw).get('token') : null) ?? url.searchParams.get('token');
    if (!token) throw missing('token');
    const grantId = refreshIndex.get(token) ?? (liveAccess(token)?.grant.id ?? undefined);
    const grant = grantId ? grantsById.get(grantId) : undefined;
    if (!grant || grant.revoked) throw new HttpError(400, { error: 'invalid_token', error_description: 'Token expired or revoked' });
    // As Google does: revoking one token revokes the user's whole grant to this client.
    for (const g of grantsById.values()) {
      if (!g.revoked && g.user.sub === grant.user.sub && g.clientId === grant.clientId) revokeGrant(g);
    }
    sendJson(res, 200, {});
  }

  async function route(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', baseUrl || 'http://127.0.0.1');
    switch (url.pathname) {
      case PATHS.auth:
        return handleAuthorize(req, res, url);
      case PATHS.token:
        return handleToken(req, res);
      case PATHS.userinfo:
        return handleUserinfo(req, res);
      case PATHS.revoke:
        return handleRevoke(req, res, url);
      case PATHS.jwks:
        return sendJson(res, 200, { keys: [(await signingKey()).jwk] });
      case PATHS.discovery:
        return sendJson(res, 200, {
          issuer: baseUrl,
          authorization_endpoint: baseUrl + PATHS.auth,
          token_endpoint: baseUrl + PATHS.token,
          userinfo_endpoint: baseUrl + PATHS.userinfo,
          revocation_endpoint: baseUrl + PATHS.revoke,
          jwks_uri: baseUrl + PATHS.jwks,
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

  const server: Server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
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
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

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
    authorizeRequests,
    calls,

    get currentUser() {
      return copyUser(currentUser);
    },
    setCurrentUser(user) {
      if (typeof user === 'string') {
        const found = [...knownUsers.values()].find((u) => u.sub === user || u.email === user);
        if (!found) throw new Error(`identity stand-in: unknown user ${user}`);
        currentUser = copyUser(found);
      } else {
        currentUser = copyUser(user);
        knownUsers.set(currentUser.sub, currentUser);
      }
    },
    denyNextConsent(times = 1) {
      denyCount = times;
    },
    setGrantedScope(scope) {
      grantedScopeOverride = scope === null ? null : normalizeScope(scope);
    },

    accessTokenOwner(token) {
      const live = liveAccess(token);
      return live ? copyUser(live.grant.user) : null;
    },
    accessTokenInfo(token) {
      const live = liveAccess(token);
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
      for (const record of accessTokens.values()) record.forcedExpired = true;
    },
    revokeUser(sub) {
      let n = 0;
      for (const g of grantsById.values()) {
        if (!g.revoked && g.user.sub === sub) {
          revokeGrant(g);
          n += 1;
        }
      }
      return n;
    },
    grants(sub) {
      return [...grantsById.values()]
        .filter((g) => !g.revoked && (sub === undefined || g.user.sub === sub))
        .map((g) => ({
          id: g.id,
          sub: g.user.sub,
          email: g.user.email,
          clientId: g.clientId,
          scope: g.scope,
          refreshToken: g.refreshToken,
          createdAt: g.createdAt,
          liveAccessTokens: [...accessTokens.keys()].filter((t) => liveAccess(t)?.grant === g).length,
        }));
    },

    injectFault(fault) {
      const times = fault.times ?? 1;
      if (!(times > 0)) throw new Error('identity stand-in: fault.times must be > 0');
      if (!Number.isInteger(fault.status) || (fault.status !== 0 && (fault.status < 100 || fault.status > 599))) {
        throw new Error(`identity stand-in: invalid fault status ${fault.status}`);
      }
      faults[fault.endpoint].push({ ...fault, remaining: times });
    },
    clearFaults() {
      for (const queue of Object.values(faults)) queue.length = 0;
    },
    resetCounters() {
      calls.authorize = 0;
      calls.token = 0;
      calls.userinfo = 0;
      calls.revoke = 0;
      calls.tokenRequests.length = 0;
      authorizeRequests.length = 0;
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
