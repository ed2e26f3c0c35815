/**
 * The one table of "PostgreSQL ended the connection" errors, read by both its users: the guard of
 * `npm start` (dropped-connections.ts), which keeps the process alive through exactly these, and
 * the domain's `isDatabaseUnavailable` (domain/db-errors.ts), which answers SERVICE_UNAVAILABLE for
 * these and for wider cases (socket codes, too many connections, a statement timeout, wrapped causes).
 * Only the error itself is read, never what it wraps: the guard must not keep a process alive for
 * an error that merely mentions a lost connection somewhere in its chain.
 */

/**
 * SQLSTATEs of a connection the server ended: class 57P (admin shutdown, crash, cannot connect
 * now, database dropped, idle session timeout) and class 08 (connection exception), except 08P01,
 * the protocol violation PostgreSQL answers to what was sent (a text parameter holding U+0000):
 * the connection was fine, the request was not.
 */
export const isConnectionLossCode = (code: string): boolean =>
  /^57P0\d$/.test(code) || (code.startsWith('08') && code !== '08P01');

/** node-postgres raises these with no code at all: the start of their fixed message. */
export const CODELESS_CONNECTION_LOSS = [
  'Connection terminated', // pg Client: the socket closed under a query or during connect
  'Client has encountered a connection error', // pg Client: used after its connection broke
] as const;

/**
 * The error says PostgreSQL ended its connection: by its code when it has one (a SQLSTATE that
 * says otherwise, or a socket's errno, is not this), else by pg's fixed message.
 */
export function isPgConnectionLoss(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return isConnectionLossCode(code);
  return CODELESS_CONNECTION_LOSS.some((start) => err.message.startsWith(start));
}
