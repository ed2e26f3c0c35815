/**
 * The one place that turns any error the process can produce into the spec's envelope
 * `{error:{code,message,requestId,details?}}`: app errors, Zod input errors, tRPC and
 * trpc-to-openapi errors, body-parsing errors, database outages and anything unexpected.
 */
import { TRPCError } from '@trpc/server';
import { ERROR_TABLE, type ErrorEnvelope, type ValidationIssue } from '../../shared/errors.ts';
import { AppError, retryAfterFor } from '../domain/errors.ts';
import { isDatabaseUnavailable } from '../domain/db-errors.ts';

interface ZodLikeIssue {
  code: string;
  path: PropertyKey[];
  keys?: string[];
}

function isZodError(err: unknown): err is { issues: ZodLikeIssue[] } {
  return !!err && typeof err === 'object' && (err as Error).name === 'ZodError' && Array.isArray((err as { issues?: unknown }).issues);
}

/** Zod issues as `{path, code}`, never values; unknown keys are named one by one. */
export function issuesFromZod(issues: ZodLikeIssue[]): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const i of issues) {
    const base = i.path.map(String);
    if (i.code === 'unrecognized_keys' && i.keys?.length) {
      for (const k of i.keys) out.push({ path: [...base, k].join('.'), code: i.code });
    } else out.push({ path: base.join('.'), code: i.code });
  }
  return out;
}

const TRPC_INPUT_CODES: Record<string, string> = {
  PARSE_ERROR: 'invalid_json',
  UNSUPPORTED_MEDIA_TYPE: 'unsupported_media_type',
  PAYLOAD_TOO_LARGE: 'too_big',
  BAD_REQUEST: 'invalid_request',
};

/** Classifies any thrown value as an AppError of the closed set. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof TRPCError) {
    if (err.cause instanceof AppError) return err.cause;
    if (err.code === 'BAD_REQUEST' && isZodError(err.cause)) {
      return new AppError('VALIDATION_FAILED', { issues: issuesFromZod(err.cause.issues) });
    }
    if (err.code in TRPC_INPUT_CODES) {
      return new AppError('VALIDATION_FAILED', { issues: [{ path: '', code: TRPC_INPUT_CODES[err.code] }] });
    }
    if (err.code === 'NOT_FOUND' || err.code === 'METHOD_NOT_SUPPORTED') return new AppError('NOT_FOUND');
    if (err.code === 'TOO_MANY_REQUESTS') return new AppError('RATE_LIMITED');
    if (isDatabaseUnavailable(err.cause)) return new AppError('SERVICE_UNAVAILABLE', { cause: err });
    return new AppError('INTERNAL_ERROR', { cause: err });
  }
  if (isDatabaseUnavailable(err)) return new AppError('SERVICE_UNAVAILABLE', { cause: err });
  const status = (err as { status?: unknown; expose?: unknown } | null)?.status;
  if (typeof status === 'number' && (err as { expose?: unknown }).expose) {
    // http-errors from Koa's own parsing (e.g. a malformed request): client errors only.
    if (status === 404 || status === 405) return new AppError('NOT_FOUND');
    if (status >= 400 && status < 500) return new AppError('VALIDATION_FAILED', { issues: [{ path: '', code: 'invalid_request' }] });
  }
  return new AppError('INTERNAL_ERROR', { cause: err });
}

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: ErrorEnvelope;
}

export function renderError(err: AppError, requestId: string): RenderedError {
  const { status, message } = ERROR_TABLE[err.code];
  const headers: Record<string, string> = {};
  const retryAfter = retryAfterFor(err);
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  const body: ErrorEnvelope = { error: { code: err.code, message, requestId } };
  if (err.code === 'VALIDATION_FAILED') body.error.details = { issues: err.issues ?? [] };
  return { status, headers, body };
}
