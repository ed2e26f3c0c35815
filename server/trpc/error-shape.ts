/**
 * The /trpc rendering of an AppError: tRPC's JSON-RPC error shape, with the spec's code,
 * status and fixed message in `data` for the typed client. The error formatter uses it, and
 * so does the envelope middleware for a /trpc request refused before tRPC ran.
 */
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { ERROR_TABLE, type ErrorCode, type ValidationIssue } from '../../shared/errors.ts';
import type { AppError } from '../domain/errors.ts';

export interface TrpcErrorShape {
  code: number;
  message: string;
  data: { appCode: ErrorCode; requestId: string; httpStatus: number; issues?: ValidationIssue[]; path?: string };
}

/**
 * `code` defaults to the table's tRPC code; the formatter passes the one tRPC already
 * answers with (its status line follows that code). `path` only for a real procedure name.
 */
export function trpcErrorShape(
  err: AppError,
  requestId: string,
  opts: { code?: number; path?: string } = {},
): TrpcErrorShape {
  const entry = ERROR_TABLE[err.code];
  return {
    code: opts.code ?? TRPC_ERROR_CODES_BY_KEY[entry.trpc],
    message: entry.message,
    data: {
      appCode: err.code,
      requestId,
      httpStatus: entry.status,
      issues: err.code === 'VALIDATION_FAILED' ? (err.issues ?? []) : undefined,
      path: opts.path,
    },
  };
}
