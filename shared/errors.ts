/**
 * The closed set of error codes of the API (spec part 7), their HTTP status and the
 * fixed public message of each. Shared by the server (which renders the envelope) and
 * the client package (which surfaces errors typed by code).
 */
export const ERROR_TABLE = {
  AUTH_REQUIRED: { status: 401, message: 'Authentication is required.' },
  FORBIDDEN: { status: 403, message: 'You are not allowed to do this.' },
  CSRF_FAILED: { status: 403, message: 'The request failed the cross-site request forgery check.' },
  OAUTH_FAILED: { status: 400, message: 'Sign-in with the identity provider failed.' },
  TOKEN_EXPIRED: { status: 401, message: 'Access to the mailbox expired or was revoked; please reconnect.' },
  VALIDATION_FAILED: { status: 400, message: 'The request is not valid.' },
  NOT_FOUND: { status: 404, message: 'The requested resource was not found.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests; please retry later.' },
  MAIL_RATE_LIMITED: { status: 429, message: 'The mail provider is rate limiting this account; please retry later.' },
  AI_RATE_LIMITED: { status: 429, message: 'The AI provider is rate limiting requests; please retry later.' },
  AI_BUDGET_EXCEEDED: { status: 429, message: 'The AI token budget of this account is used up.' },
  AI_REQUEST_FAILED: { status: 502, message: 'The AI provider request failed.' },
  SYNC_FAILED: { status: 502, message: 'The mail provider request failed.' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable.' },
  INTERNAL_ERROR: { status: 500, message: 'An internal error occurred.' },
} as const satisfies Record<string, { status: number; message: string }>;

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
