/**
 * The closed set of error codes of the API (spec part 7): the HTTP status, the fixed public
 * message and the tRPC code of each (so /trpc answers the same status). Shared by the
 * server (which renders the envelope) and the client package (which surfaces errors typed
 * by code).
 */
/** tRPC's error codes that the table uses (spelled as @trpc/server names them; no import here). */
type TrpcCode =
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'TOO_MANY_REQUESTS'
  | 'BAD_GATEWAY'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL_SERVER_ERROR';

export const ERROR_TABLE = {
  AUTH_REQUIRED: { status: 401, message: 'Authentication is required.', trpc: 'UNAUTHORIZED' },
  FORBIDDEN: { status: 403, message: 'You are not allowed to do this.', trpc: 'FORBIDDEN' },
  CSRF_FAILED: { status: 403, message: 'The request failed the cross-site request forgery check.', trpc: 'FORBIDDEN' },
  OAUTH_FAILED: { status: 400, message: 'Sign-in with the identity provider failed.', trpc: 'BAD_REQUEST' },
  TOKEN_EXPIRED: {
    status: 401,
    message: 'Access to the mailbox expired or was revoked; please reconnect.',
    trpc: 'UNAUTHORIZED',
  },
  VALIDATION_FAILED: { status: 400, message: 'The request is not valid.', trpc: 'BAD_REQUEST' },
  NOT_FOUND: { status: 404, message: 'The requested resource was not found.', trpc: 'NOT_FOUND' },
  RATE_LIMITED: { status: 429, message: 'Too many requests; please retry later.', trpc: 'TOO_MANY_REQUESTS' },
  MAIL_RATE_LIMITED: {
    status: 429,
    message: 'The mail provider is rate limiting this account; please retry later.',
    trpc: 'TOO_MANY_REQUESTS',
  },
  AI_RATE_LIMITED: {
    status: 429,
    message: 'The AI provider is rate limiting requests; please retry later.',
    trpc: 'TOO_MANY_REQUESTS',
  },
  AI_BUDGET_EXCEEDED: {
    status: 429,
    message: 'The AI token budget of this account is used up.',
    trpc: 'TOO_MANY_REQUESTS',
  },
  AI_REQUEST_FAILED: { status: 502, message: 'The AI provider request failed.', trpc: 'BAD_GATEWAY' },
  SYNC_FAILED: { status: 502, message: 'The mail provider request failed.', trpc: 'BAD_GATEWAY' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable.', trpc: 'SERVICE_UNAVAILABLE' },
  INTERNAL_ERROR: { status: 500, message: 'An internal error occurred.', trpc: 'INTERNAL_SERVER_ERROR' },
} as const satisfies Record<string, { status: number; message: string; trpc: TrpcCode }>;

export type ErrorCode = keyof typeof ERROR_TABLE;
export const ERROR_CODES = Object.keys(ERROR_TABLE) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_TABLE, value);
}

/** One element of `details.issues`: the failing field's dotted path and a reason, never the value. */
export interface ValidationIssue {
  path: string;
  code: string;
}

export interface ErrorEnvelope {
  error: {
    code: ErrorCode;
    message: string;
    requestId: string;
    details?: { issues: ValidationIssue[] };
  };
}
