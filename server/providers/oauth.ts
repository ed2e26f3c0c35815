/**
 * The identity provider (runtime-contract part 3) behind a small interface, implemented
 * with google-auth-library's OAuth2Client pointed at the configured endpoints. The same
 * client class, given an account's tokens, authorises the mail API and refreshes the
 * access token when it has expired or after a 401.
 */
import { gaxios, OAuth2Client, type Credentials } from 'google-auth-library';
import type { Config } from '../infra/config.ts';

export const MAIL_SCOPE = 'https://www.googleapis.com/auth/gmail.readonly';
export const SCOPES = ['openid', 'email', MAIL_SCOPE];
/** Each call's timeout unless GOOGLE_TIMEOUT_MS sets another. */
export const PROVIDER_TIMEOUT_MS = 10_000;

export interface ProviderTokens {
  accessToken: string;
  refreshToken?: string;
  expiresAt?: Date;
  scope: string;
}

export interface Identity {
  sub: string;
  email: string;
}

export interface OAuthProvider {
  authorizationUrl(p: { state: string; codeChallenge: string }): string;
  exchangeCode(p: { code: string; codeVerifier: string }): Promise<ProviderTokens>;
  userinfo(accessToken: string): Promise<Identity>;
  revoke(token: string): Promise<void>;
  /** An authorised client for provider APIs; `onTokens` receives refreshed tokens to store. */
  authorisedClient(
    tokens: { accessToken?: string; refreshToken: string; expiresAt?: Date },
    onTokens: (t: Credentials) => void,
  ): OAuth2Client;
}

/** True when the provider says the grant is revoked or expired (`invalid_grant`). */
export function isInvalidGrant(err: unknown): boolean {
  const e = err as { response?: { data?: { error?: unknown } }; message?: unknown } | null;
  return (
    e?.response?.data?.error === 'invalid_grant' ||
    (typeof e?.message === 'string' && e.message.includes('invalid_grant'))
  );
}

/**
 * google-auth-library sends its token-endpoint calls (code exchange, refresh) with a per-request
 * `retry: true` (3 retries on 5xx, POST included), which overrides `transporterOptions.retry`.
 * Force it off for those calls: a code is single use, and one provider timeout must bound the
 * callback. Other requests (the mail client's) keep the retry settings their caller chose.
 */
function tokenNoRetryTransporter(tokenUrl: string, timeout: number): gaxios.Gaxios {
  return new (class extends gaxios.Gaxios {
    override request<T>(opts: gaxios.GaxiosOptions = {}): gaxios.GaxiosPromise<T> {
      return super.request<T>(
        String(opts.url) === tokenUrl
          ? { ...opts, retry: false, retryConfig: { retry: 0, noResponseRetries: 0 } }
          : opts,
      );
    }
  })({ timeout, retry: false });
}

export function createOAuthProvider(config: Readonly<Config>): OAuthProvider {
  const o = config.oauth;
  const timeout = config.timeoutsMs.identity ?? PROVIDER_TIMEOUT_MS;
  const client = () =>
    new OAuth2Client({
      clientId: o.clientId,
      clientSecret: o.clientSecret,
      redirectUri: o.redirectUri,
      endpoints: { oauth2AuthBaseUrl: o.authUrl, oauth2TokenUrl: o.tokenUrl, oauth2RevokeUrl: o.revokeUrl },
      transporter: tokenNoRetryTransporter(o.tokenUrl, timeout),
      // Refresh once after any 401 even when the stored expiry says the token is fresh.
      forceRefreshOnFailure: true,
    });
  return {
    authorizationUrl({ state, codeChallenge }) {
      const url = new URL(o.authUrl);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: o.clientId ?? '',
        redirect_uri: o.redirectUri,
        scope: SCOPES.join(' '),
        state,
        access_type: 'offline',
        prompt: 'consent',
        code_challenge: codeChallenge,
        code_challenge_method: 'S256',
      }).toString();
      return url.toString();
    },
    async exchangeCode({ code, codeVerifier }) {
      const { tokens } = await client().getToken({ code, codeVerifier });
      if (!tokens.access_token) throw new Error('token response without access_token');
      return {
        accessToken: tokens.access_token,
        refreshToken: tokens.refresh_token ?? undefined,
        expiresAt: tokens.expiry_date ? new Date(tokens.expiry_date) : undefined,
        scope: tokens.scope ?? '',
      };
    },
    async userinfo(accessToken) {
      const res = await fetch(o.userinfoUrl, {
        headers: { Authorization: `Bearer ${accessToken}` },
        signal: AbortSignal.timeout(timeout),
      });
      if (!res.ok) throw new Error(`userinfo answered HTTP ${res.status}`);
      const body = (await res.json()) as { sub?: unknown; email?: unknown; email_verified?: unknown };
      if (typeof body.sub !== 'string' || !body.sub || typeof body.email !== 'string' || !body.email) {
        throw new Error('userinfo answer lacks sub or email');
      }
      // Notifications find their account by address: only an address the provider verified may own one.
      if (body.email_verified !== true) throw new Error('userinfo: the email address is not verified');
      return { sub: body.sub, email: body.email };
    },
    async revoke(token) {
      const res = await fetch(o.revokeUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }),
        signal: AbortSignal.timeout(timeout),
      });
      await res.body?.cancel();
      // 400 invalid_token: already revoked upstream, which is what we wanted.
      if (!res.ok && res.status !== 400) throw new Error(`revoke answered HTTP ${res.status}`);
    },
    authorisedClient(tokens, onTokens) {
      const c = client();
      c.setCredentials({
        access_token: tokens.accessToken,
        refresh_token: tokens.refreshToken,
        expiry_date: tokens.expiresAt?.getTime(),
      });
      c.on('tokens', onTokens);
      return c;
    },
  };
}
