/**
 * AppError: the one error type services throw. Its code comes from the spec's closed set;
 * the HTTP status, tRPC code and public message come from the shared table, never from the
 * thrower. Transports render it (http/envelope.ts for REST, trpc/error-shape.ts for /trpc).
 */
import { ERROR_TABLE, type ErrorCode, type ValidationIssue } from '../../shared/errors.ts';

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly issues?: ValidationIssue[];
  /** Seconds to wait, for 429 and 503 (sent as Retry-After). */
  readonly retryAfter?: number;

  constructor(code: ErrorCode, opts: { issues?: ValidationIssue[]; retryAfter?: number; cause?: unknown } = {}) {
    super(ERROR_TABLE[code].message, { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.issues = opts.issues;
    this.retryAfter = opts.retryAfter;
  }

  get status(): number {
    return ERROR_TABLE[this.code].status;
  }
}

/** Default Retry-After (seconds) where the thrower gave none: 429 and 503 always carry one. */
export const DEFAULT_RETRY_AFTER = { 429: 60, 503: 5 } as const;

export function retryAfterFor(err: AppError): number | undefined {
  const status = err.status;
  if (status !== 429 && status !== 503) return undefined;
  return Math.max(1, Math.ceil(err.retryAfter ?? DEFAULT_RETRY_AFTER[status]));
}

export interface ZodLikeIssue {
  code: string;
  path: PropertyKey[];
  keys?: string[];
  /** A custom issue names its own code here (`params: { code }`). */
  params?: { code?: unknown };
}

/** Zod issues as `{path, code}`, never values; unknown keys are named one by one. */
export function issuesFromZod(issues: ZodLikeIssue[]): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const i of issues) {
    const base = i.path.map(String);
    if (i.code === 'unrecognized_keys' && i.keys?.length) {
      for (const k of i.keys) out.push({ path: [...base, k].join('.'), code: i.code });
    } else
      out.push({
        path: base.join('.'),
        code: i.code === 'custom' && typeof i.params?.code === 'string' ? i.params.code : i.code,
      });
  }
  return out;
}

/** A request-level input problem (no field path): malformed JSON, a body too big, a wrong type. */
export const invalidInput = (code: string) => new AppError('VALIDATION_FAILED', { issues: [{ path: '', code }] });
