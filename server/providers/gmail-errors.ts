/**
 * The mail provider's failures as the spec's codes (gmail.ts): quota (429, or 403 with a
 * quota reason) is MAIL_RATE_LIMITED with the provider's Retry-After, a refused token or
 * grant TOKEN_EXPIRED, anything else (5xx, timeouts, dropped connections, garbage) SYNC_FAILED.
 */
import { AppError } from '../domain/errors.ts';
import { isInvalidGrant } from './oauth.ts';

const QUOTA_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'dailyLimitExceeded', 'quotaExceeded']);
interface ErrorLike {
  status?: unknown;
  response?: { status?: unknown; headers?: unknown; data?: unknown };
}

export function statusOf(err: unknown): number | undefined {
  const e = err as ErrorLike | null;
  const s = e?.response?.status ?? e?.status;
  return typeof s === 'number' ? s : undefined;
}

function reasonOf(err: unknown): string | undefined {
  const data = (err as ErrorLike | null)?.response?.data as { error?: { errors?: { reason?: unknown }[] } } | undefined;
  const reason = typeof data === 'object' ? data?.error?.errors?.[0]?.reason : undefined;
  return typeof reason === 'string' ? reason : undefined;
}

function retryAfterOf(err: unknown): number | undefined {
  const h = (err as ErrorLike | null)?.response?.headers as { get?: unknown } | Record<string, unknown> | undefined;
  // gaxios hands over a fetch Headers object (not always this realm's class); older versions a plain record.
  const raw =
    typeof h?.get === 'function'
      ? (h as { get(n: string): string | null }).get('retry-after')
      : (h as Record<string, unknown> | undefined)?.['retry-after'];
  const n = Number(raw);
  return raw != null && Number.isFinite(n) && n >= 0 ? Math.min(Math.ceil(n), 3600) : undefined;
}

/** An error answer's body is small (Google's error JSON): no more than this is read of a streamed one. */
const ERROR_BODY_MAX = 64 * 1024;

/**
 * A streamed answer (responseType 'stream' with validateStatus off, since gaxios drops the
 * error body of a stream) checked as gaxios checks the others: a 2xx answer comes back with its
 * body unread; any other is thrown as gaxios would throw it, with its status, headers and
 * parsed body, for classifyGmailError and the callers' status checks (401 refresh, 404 gone).
 */
export async function okStream<T extends { status: number; headers: unknown; data: unknown }>(res: T): Promise<T> {
  if (res.status >= 200 && res.status < 300) return res;
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of res.data as AsyncIterable<Uint8Array>) {
    chunks.push(chunk);
    if ((length += chunk.byteLength) > ERROR_BODY_MAX) break;
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let data: unknown = text;
  try {
    data = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  throw Object.assign(new Error(`the mail provider answered ${res.status}`), {
    status: res.status,
    response: { status: res.status, headers: res.headers, data },
  });
}

/** The one mapping from provider failures to the spec's codes. */
export function classifyGmailError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isInvalidGrant(err)) return new AppError('TOKEN_EXPIRED', { cause: err });
  const status = statusOf(err);
  if (status === 429 || (status === 403 && QUOTA_REASONS.has(reasonOf(err) ?? ''))) {
    return new AppError('MAIL_RATE_LIMITED', { retryAfter: retryAfterOf(err) ?? 30, cause: err });
  }
  if (status === 401) return new AppError('TOKEN_EXPIRED', { cause: err });
  return new AppError('SYNC_FAILED', { cause: err });
}

/**
 * The provider has no mailbox for the account (a Google account without Gmail answers
 * `failedPrecondition`, "Mail service not enabled", to every mail call, forever).
 */
export function isNoMailbox(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (statusOf(e) === 400 && reasonOf(e) === 'failedPrecondition') return true;
  }
  return false;
}
