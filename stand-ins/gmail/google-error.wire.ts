/**
 * Errors of the Gmail stand-in in Google's JSON error shape, with the status names, reasons and
 * messages the real API sends per HTTP status (rate-limit reasons under `usageLimits`).
 */
import type { ServerResponse } from 'node:http';
import type { Json } from './mailbox.types.ts';

export class HttpError extends Error {
  readonly code: number;
  readonly reason?: string;
  readonly extra: Json;
  constructor(code: number, message?: string, reason?: string, extra: Json = {}) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.extra = extra;
  }
}

const STATUS: Record<number, [status: string, reason: string, message: string]> = {
  400: ['INVALID_ARGUMENT', 'badRequest', 'Bad Request'],
  401: [
    'UNAUTHENTICATED',
    'authError',
    'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
  ],
  403: ['PERMISSION_DENIED', 'forbidden', 'The caller does not have permission'],
  404: ['NOT_FOUND', 'notFound', 'Requested entity was not found.'],
  409: ['ABORTED', 'conflict', 'The operation was aborted.'],
  429: ['RESOURCE_EXHAUSTED', 'rateLimitExceeded', 'Too many concurrent requests for user.'],
  500: ['INTERNAL', 'backendError', 'Internal error encountered.'],
  502: ['UNAVAILABLE', 'backendError', 'Bad Gateway'],
  503: ['UNAVAILABLE', 'backendError', 'The service is currently unavailable.'],
  504: ['DEADLINE_EXCEEDED', 'backendError', 'The request timed out.'],
};
const RATE_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'dailyLimitExceeded', 'quotaExceeded']);
const RATE_MESSAGES: Record<string, string> = {
  userRateLimitExceeded: 'User-rate limit exceeded.',
  rateLimitExceeded: 'Too many concurrent requests for user.',
  dailyLimitExceeded: 'Daily Limit Exceeded.',
};

/** Google's JSON error body: `{error:{code, message, errors:[{message, domain, reason}], status}}`. */
export function googleError(code: number, message?: string, reason?: string, extra: Json = {}): Json {
  const [status, defReason, defMessage] =
    STATUS[code] ??
    (code >= 500
      ? ['INTERNAL', 'backendError', 'Backend Error']
      : ['FAILED_PRECONDITION', 'failedPrecondition', 'Request failed']);
  const r = reason ?? defReason;
  const msg = message ?? RATE_MESSAGES[r] ?? defMessage;
  const domain = RATE_REASONS.has(r) ? 'usageLimits' : 'global';
  return {
    error: {
      code,
      message: msg,
      errors: [{ message: code === 401 ? 'Invalid Credentials' : msg, domain, reason: r, ...extra }],
      status,
    },
  };
}

/** Sends a JSON answer (pretty-printed like Google's), or an empty one for a null body. */
export function send(
  res: ServerResponse,
  status: number,
  body: Json | null,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.writableEnded) return;
  if (body === null) {
    res.writeHead(status, headers).end();
    return;
  }
  const text = JSON.stringify(body, null, 2);
  res
    .writeHead(status, {
      'content-type': 'application/json; charset=UTF-8',
      'content-length': Buffer.byteLength(text),
      ...headers,
    })
    .end(text);
}

/** A JSON answer's bytes as `send` writes them. */
export const jsonBytes = (body: Json): Buffer => Buffer.from(JSON.stringify(body, null, 2));

/** Sends JSON bytes made by `jsonBytes` (threads.get's answers, kept when asked: gmail.state.ts). */
export function sendBytes(res: ServerResponse, status: number, bytes: Buffer): void {
  if (res.destroyed || res.writableEnded) return;
  res
    .writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': bytes.byteLength })
    .end(bytes);
}
