/**
 * Recognises "the database is unreachable" among driver errors, so that callers answer
 * SERVICE_UNAVAILABLE instead of INTERNAL_ERROR. Classified by what the error carries:
 * the SQLSTATE (class 08 connection exception, 57P0x shutdown/crash, 53300 too many
 * connections, 57014 statement timeout), the socket's errno code, or MikroORM's
 * ConnectionException. Any other SQLSTATE means the server answered: a data error (class
 * 22, e.g. 22P05, 22021), or 08P01, the protocol violation PostgreSQL answers to a text
 * parameter holding U+0000, is a fault of what was sent, never an outage (no Retry-After
 * inviting a retry that fails the same way). node-postgres raises a few errors with no code
 * at all (a socket closed under a query, a pool checkout that timed out, a client used after
 * it broke); only those are recognised by their fixed text, listed one by one below.
 */
import { ConnectionException } from '@mikro-orm/core';
import { CODELESS_CONNECTION_LOSS, isConnectionLossCode } from '../infra/pg-connection-loss.ts';

/** A lost connection (infra's table), or one the server would not give (53300) or gave up on (57014). */
const SQLSTATE_UNAVAILABLE = (code: string) => isConnectionLossCode(code) || code === '53300' || code === '57014';
const isSqlState = (code: string) => /^[0-9A-Z]{5}$/.test(code);
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);

/** node-postgres (pg, pg-pool) errors that carry no code: the start of their fixed message. */
const CODELESS_PG_ERRORS = [
  ...CODELESS_CONNECTION_LOSS,
  'timeout exceeded when trying to connect', // pg-pool: connectionTimeoutMillis passed
  'Client was closed', // pg Client: used after end()
  'Query read timeout', // pg Client: query_timeout passed
];

export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  if (err instanceof ConnectionException) return true;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; previous?: unknown; errors?: unknown };
  if (typeof e.code === 'string') {
    if (SOCKET_CODES.has(e.code)) return true;
    // The server answered with a SQLSTATE: that, and nothing it wraps, says whether it is down.
    if (isSqlState(e.code)) return SQLSTATE_UNAVAILABLE(e.code);
  } else if (typeof e.message === 'string' && CODELESS_PG_ERRORS.some((m) => (e.message as string).startsWith(m)))
    return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x, depth + 1))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1) || isDatabaseUnavailable(e.previous, depth + 1);
}
