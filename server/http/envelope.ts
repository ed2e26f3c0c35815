/**
 * The REST rendering of an AppError: the spec's envelope
 * `{error:{code,message,requestId,details?}}`. Classifying what was thrown is
 * errors/classify.ts; the /trpc rendering is trpc/error-shape.ts.
 */
import { ERROR_TABLE, type ErrorEnvelope } from '../../shared/errors.ts';
import type { AppError } from '../domain/errors.ts';
import { errorHead } from '../errors/classify.ts';

export interface RenderedError<B> {
  status: number;
  headers: Record<string, string>;
  body: B;
}

/** The REST rendering: the spec's envelope. */
export function renderEnvelope(err: AppError, requestId: string): RenderedError<ErrorEnvelope> {
  const body: ErrorEnvelope = { error: { code: err.code, message: ERROR_TABLE[err.code].message, requestId } };
  if (err.code === 'VALIDATION_FAILED') body.error.details = { issues: err.issues ?? [] };
  return { ...errorHead(err), body };
}
