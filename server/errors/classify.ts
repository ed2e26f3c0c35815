/**
 * What any thrown value answers with, whatever the transport: `toAppError` classifies it
 * (app errors, Zod input errors, tRPC and trpc-to-openapi errors, body-parsing errors,
 * database outages, anything unexpected) as an AppError of the closed set, and `errorHead`
 * gives that error's status and headers. The renderings are http/envelope.ts (REST) and
 * trpc/error-shape.ts (/trpc); both transports classify here, so they cannot disagree.
 *
 * Not in domain/: recognising tRPC's errors needs @trpc/server, which domain/ never imports.
 */
import { TRPCError } from '@trpc/server';
import { ERROR_TABLE } from '../../shared/errors.ts';
import { AppError, invalidInput, issuesFromZod, retryAfterFor, type ZodLikeIssue } from '../domain/errors.ts';
import { isDatabaseUnavailable } from '../domain/db-errors.ts';

function isZodError(err: unknown): err is { issues: ZodLikeIssue[] } {
  return (
    !!err &&
    typeof err === 'object' &&
    (err as Error).name === 'ZodError' &&
    Array.isArray((err as { issues?: unknown }).issues)
  );
}

/** tRPC's own refusals of a request's form, as the issue code the envelope names. */
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
    if (err.code in TRPC_INPUT_CODES) return invalidInput(TRPC_INPUT_CODES[err.code]!);
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
    if (status >= 400 && status < 500) return invalidInput('invalid_request');
  }
  return new AppError('INTERNAL_ERROR', { cause: err });
}

/** Status and headers every transport sends with an error: the table's status, and Retry-After on 429/503. */
export function errorHead(err: AppError): { status: number; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  const retryAfter = retryAfterFor(err);
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  return { status: ERROR_TABLE[err.code].status, headers };
}
