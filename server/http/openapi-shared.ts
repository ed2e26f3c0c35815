/**
 * The parts of the OpenAPI document every operation shares: the error envelope, the
 * response headers (request id, rate limit, Retry-After), the security schemes (the signed
 * session cookie pair, the CSRF header, the admin bearer), the tags, and how to call the
 * API, in words.
 */
import { ERROR_CODES, ERROR_TABLE, type ErrorCode } from '../../shared/errors.ts';

type Json = Record<string, any>;

export const envelopeSchema = {
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'requestId'],
      additionalProperties: false,
      properties: {
        code: { type: 'string', enum: ERROR_CODES },
        message: { type: 'string', description: 'The fixed message of the code; never the input.' },
        requestId: { type: 'string', description: 'Also in the X-Request-Id response header.' },
        details: {
          type: 'object',
          additionalProperties: false,
          required: ['issues'],
          description: 'Only with VALIDATION_FAILED.',
          properties: {
            issues: {
              type: 'array',
              items: {
                type: 'object',
                required: ['path', 'code'],
                additionalProperties: false,
                properties: { path: { type: 'string' }, code: { type: 'string' } },
              },
            },
          },
        },
      },
    },
  },
};

// Every header the document lists is one the service always sends with that response: required.
const integerHeader = (description: string) => ({
  description,
  required: true,
  schema: { type: 'integer', minimum: 0 },
});

export const headers: Json = {
  RequestId: {
    description: 'The request id (a well-formed X-Request-Id sent by the caller is kept).',
    required: true,
    schema: { type: 'string' },
  },
  RateLimitLimit: integerHeader("Requests allowed in the window of the route's bucket."),
  RateLimitRemaining: integerHeader('Requests left in the window.'),
  RateLimitReset: integerHeader('Seconds until the window resets.'),
  RetryAfter: integerHeader('Seconds to wait before trying again.'),
};

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
export const successHeaders = {
  'X-Request-Id': ref('RequestId'),
  'RateLimit-Limit': ref('RateLimitLimit'),
  'RateLimit-Remaining': ref('RateLimitRemaining'),
  'RateLimit-Reset': ref('RateLimitReset'),
};

/** The error responses of an operation: its codes grouped by status, with the headers each status carries. */
export function errorResponses(codes: readonly ErrorCode[]): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set<ErrorCode>(['RATE_LIMITED', 'INTERNAL_ERROR', ...codes])) {
    const { status } = ERROR_TABLE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Json = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const h: Json = { 'X-Request-Id': ref('RequestId') };
    if (status === 429 || status === 503) h['Retry-After'] = ref('RetryAfter');
    if (status === 429)
      Object.assign(h, {
        'RateLimit-Limit': ref('RateLimitLimit'),
        'RateLimit-Remaining': ref('RateLimitRemaining'),
        'RateLimit-Reset': ref('RateLimitReset'),
      });
    out[String(status)] = {
      description: list.join(', '),
      headers: h,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
    };
  }
  return out;
}

export const securitySchemes = {
  sessionCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: 'mia_session',
    description:
      'The session cookie set by GET /auth/provider/callback after sign-in; named `__Host-mia_session` when the service is served over https.',
  },
  sessionSignature: {
    type: 'apiKey',
    in: 'cookie',
    name: 'mia_session.sig',
    description: 'Its signature: both cookies must be sent together.',
  },
  csrfToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-CSRF-Token',
    description:
      'The csrfToken of GET /auth/session. State-changing calls also need `Origin` equal to the web app origin (WEB_ORIGIN).',
  },
  statusAdmin: { type: 'http', scheme: 'bearer', description: 'STATUS_ADMIN_TOKEN.' },
  metricsScraper: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN: GET /metrics only.' },
} as const;

const session = { sessionCookie: [], sessionSignature: [] };
/** Security requirement objects by what a route checks, read from the errors it declares. */
export function securityFor(codes: readonly ErrorCode[], sessionOptional = false): Json[] {
  if (codes.includes('CSRF_FAILED')) return [{ ...session, csrfToken: [] }];
  if (codes.includes('FORBIDDEN')) return [{ statusAdmin: [] }];
  if (codes.includes('AUTH_REQUIRED')) return sessionOptional ? [{}, session] : [session];
  return [];
}

export const tags = [
  {
    name: 'auth',
    description: 'Sign-in (a browser redirect flow), the session and its CSRF token, disconnect, account deletion.',
  },
  { name: 'mail', description: 'The synced copy of the inbox: sync, thread list, thread detail.' },
  { name: 'ai', description: "Triage and reply drafts of a thread, within the account's token budget." },
  { name: 'settings', description: 'Signature and response-style defaults.' },
  { name: 'analytics', description: 'Product-analytics events.' },
  { name: 'status', description: 'The public incident feed and its admin writes.' },
  { name: 'system', description: 'Health probe and pages.' },
];

export const description = `Read-only inbox sync with AI triage and reply drafts.

**Signing in.** Open \`GET /auth/provider\` in a browser; after consent the callback sets the
session cookies \`mia_session\` and \`mia_session.sig\` (send both; over https they are
\`__Host-mia_session\` and \`__Host-mia_session.sig\`) and redirects to the web app.

**State-changing calls** (every POST, PATCH and DELETE that needs a session) also send the
header \`X-CSRF-Token\` with the \`csrfToken\` of \`GET /auth/session\`, and \`Origin\` equal to
the web app's origin. Checks run in this order: rate limit (429), session (401), CSRF (403),
input (400).

**Errors** always use the envelope \`ErrorEnvelope\`, with the request id also in
\`X-Request-Id\`. 429 and 503 carry \`Retry-After\`; every answer of a rate-limited route
carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`.

The same procedures are served for the typed client at \`/trpc\` (see the client package).`;
