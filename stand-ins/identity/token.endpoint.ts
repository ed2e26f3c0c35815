/**
 * The identity stand-in's token endpoint: client authentication (Basic or form), the
 * authorization_code grant with PKCE and id_token, and the refresh_token grant.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ACCESS_TOKEN_TTL_S,
  CODE_TTL_MS,
  REVOKED_DESCRIPTION,
  scopeHas,
  type GrantRecord,
  type IdentityState,
} from './grant.store.ts';
import { applyFault, basicCredentials, HttpError, isForm, missing, readBody, sendJson } from './http.wire.ts';
import { random, signJwt } from './id-token.jwt.ts';

function authenticateClient(state: IdentityState, req: IncomingMessage, form: Record<string, string>) {
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
  if (id !== state.clientId) throw unauthorized('The OAuth client was not found.');
  if (secret !== state.clientSecret) throw unauthorized('Unauthorized');
}

const invalidGrant = (description: string) =>
  new HttpError(400, { error: 'invalid_grant', error_description: description });

async function exchangeCode(state: IdentityState, form: Record<string, string>): Promise<Record<string, unknown>> {
  const code = form['code'];
  if (!code) throw missing('code');
  if (!form['redirect_uri']) throw missing('redirect_uri');
  const record = state.codes.get(code);
  if (!record) throw invalidGrant('Malformed auth code.');
  if (record.used) throw invalidGrant('Authorization code was already redeemed.');
  if (state.now() - record.issuedAt > CODE_TTL_MS) throw invalidGrant('Authorization code has expired.');
  if (record.redirectUri !== form['redirect_uri'])
    throw invalidGrant('redirect_uri does not match the authorization request.');
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
    createdAt: state.now(),
    revoked: false,
  };
  state.grantsById.set(grant.id, grant);
  if (grant.refreshToken) state.refreshIndex.set(grant.refreshToken, grant.id);

  const body: Record<string, unknown> = {
    access_token: state.issueAccessToken(grant),
    expires_in: ACCESS_TOKEN_TTL_S,
    ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {}),
    scope: grant.scope,
    token_type: 'Bearer',
  };
  if (scopeHas(grant.scope, 'openid')) {
    const iat = Math.floor(state.now() / 1000);
    body['id_token'] = await signJwt({
      iss: state.baseUrl,
      azp: grant.clientId,
      aud: grant.clientId,
      sub: grant.user.sub,
      ...(scopeHas(grant.scope, 'email')
        ? { email: grant.user.email, email_verified: grant.user.email_verified ?? true }
        : {}),
      ...(record.nonce !== undefined ? { nonce: record.nonce } : {}),
      iat,
      exp: iat + ACCESS_TOKEN_TTL_S,
    });
  }
  return body;
}

function refresh(state: IdentityState, form: Record<string, string>): Record<string, unknown> {
  const refreshToken = form['refresh_token'];
  if (!refreshToken) throw missing('refresh_token');
  const grant = state.grantsById.get(state.refreshIndex.get(refreshToken) ?? '');
  if (!grant || grant.revoked) throw invalidGrant(REVOKED_DESCRIPTION);
  return {
    access_token: state.issueAccessToken(grant),
    expires_in: ACCESS_TOKEN_TTL_S,
    scope: grant.scope,
    token_type: 'Bearer',
  };
}

export async function handleToken(state: IdentityState, req: IncomingMessage, res: ServerResponse) {
  state.calls.token += 1;
  const raw = await readBody(req);
  const form = isForm(req) ? Object.fromEntries(new URLSearchParams(raw)) : {};
  if (req.method === 'POST') state.calls.tokenRequests.push({ ...form });
  const fault = state.takeFault('token');
  if (fault) return applyFault(res, fault);

  if (req.method !== 'POST')
    throw new HttpError(405, { error: 'invalid_request', error_description: 'Use POST.' }, { allow: 'POST' });
  if (!isForm(req)) {
    throw new HttpError(400, {
      error: 'invalid_request',
      error_description: 'Content-Type must be application/x-www-form-urlencoded.',
    });
  }
  authenticateClient(state, req, form);
  const grantType = form['grant_type'];
  if (!grantType) throw missing('grant_type');
  let body: Record<string, unknown>;
  if (grantType === 'authorization_code') body = await exchangeCode(state, form);
  else if (grantType === 'refresh_token') body = refresh(state, form);
  else
    throw new HttpError(400, {
      error: 'unsupported_grant_type',
      error_description: `Invalid grant_type: ${grantType}`,
    });
  sendJson(res, 200, body);
}
