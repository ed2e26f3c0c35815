/**
 * Structured JSON logs (pino). Anything that could carry a secret is redacted by path, and
 * request logs carry the path without its query string (OAuth codes travel there).
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { currentRequestId } from './request-scope.ts';
import { traceLogFields } from './trace-hooks.ts';

export type { Logger };

export const REDACT_PATHS = [
  'headers.cookie', 'headers.authorization', 'headers["x-csrf-token"]', 'headers["set-cookie"]',
  '*.accessToken', '*.refreshToken', '*.access_token', '*.refresh_token', '*.id_token', '*.token',
  '*.password', '*.apiKey', '*.secret', '*.code', '*.codeVerifier', '*.code_verifier', '*.csrfToken',
];

export function createLogger(opts: { level?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      base: { service: 'mail-inbox-assistant' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // Every line logged while handling a request carries its id, whichever logger wrote it,
      // and, when tracing runs, the ids of the span it was written in (trace_id, span_id).
      mixin: () => {
        const requestId = currentRequestId();
        const span = traceLogFields();
        if (span) return requestId ? { requestId, ...span } : span;
        return requestId ? { requestId } : {};
      },
    },
    opts.destination,
  );
}

/**
 * Where `npm start` writes its lines: JSON for collectors, or readable lines (pino-pretty,
 * loaded only then) when asked, or by default on a terminal.
 */
export async function logDestination(
  format: 'json' | 'pretty' | undefined,
  opts: { isTTY?: boolean; out?: NodeJS.WritableStream } = {},
): Promise<DestinationStream | undefined> {
  const isTTY = opts.isTTY ?? Boolean(process.stdout.isTTY);
  if (format === 'json' || (format === undefined && !isTTY)) return undefined;
  const { default: pretty } = await import('pino-pretty');
  return pretty({ sync: true, colorize: isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', destination: opts.out ?? 1 });
}

/**
 * The logger of the one access line per request: the same destination, level and base fields,
 * without the redaction pass. Its fields are fixed (request id, method, path without its query,
 * status, duration, error code) and carry nothing secret; redaction cost every line its share.
 */
export function accessLogger(log: Logger): Logger {
  return log.child({}, { redact: [] });
}

/**
 * Error messages quote the values they failed on: PostgreSQL's `date/time field value out of
 * range: "…"`, `invalid input syntax for type uuid: "…"`, `Key (email)=(…) already exists`.
 * Those values are request or mail data, so they are cut out of logged messages.
 */
export function redactQuoted(message: string): string {
  return message.replace(/"(?:[^"\\]|\\.)*"/g, '"[value]"').replace(/=\((?:[^()]|\([^()]*\))*\)/g, '=([value])');
}

/** A loggable summary of an error: class, code and message, never a stack or a payload. */
export function errorSummary(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error: typeof err };
  const e = err as Error & { code?: unknown; status?: unknown };
  const cause = e.cause instanceof Error ? `${e.cause.name}: ${redactQuoted(e.cause.message)}` : undefined;
  return { errName: e.name, errCode: e.code, errStatus: e.status, errMessage: redactQuoted(e.message).slice(0, 300), errCause: cause?.slice(0, 300) };
}
