/**
 * Recognises "the database is unreachable" among driver errors, so that callers answer
 * SERVICE_UNAVAILABLE instead of INTERNAL_ERROR. Looks at error codes, not message text,
 * except for the few node-postgres errors that carry no code.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN',
  '57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006', '08007', '57014',
]);
const UNAVAILABLE_MESSAGES = [
  'Connection terminated', 'timeout exceeded when trying to connect', 'Client has encountered a connection error',
  'Connection ended unexpectedly', 'connect ECONNREFUSED', 'Query read timeout', 'Client was closed',
];

export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; previous?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.some((m) => (e.message as string).includes(m))) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x, depth + 1))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1) || isDatabaseUnavailable(e.previous, depth + 1);
}
