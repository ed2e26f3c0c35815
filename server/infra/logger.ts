/**
 * Structured JSON logs (pino). Anything that could carry a secret is redacted by key name at
 * any depth, and request logs carry the path without its query string (OAuth codes travel there).
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { currentRequestId } from './request-scope.ts';
import { traceLogFields } from './trace-hooks.ts';

export type { Logger };

const CENSOR = '[redacted]';

/**
 * Key names whose values are never logged, compared without case, `-` or `_` (`Authorization`,
 * `refresh_token`, `x-csrf-token` all match). By name rather than by pino path: header names
 * come in either case (Node's `authorization`, the Google client's `Authorization`), and a
 * client library's error nests its request at a depth of its own
 * (`err.config.headers.Authorization`, `err.response.config.headers…`), which no fixed list of
 * paths keeps up with.
 */
const SECRET_KEYS = new Set([
  'accesstoken',
  'refreshtoken',
  'idtoken',
  'token',
  'password',
  'apikey',
  'xapikey',
  'secret',
  'clientsecret',
  'codeverifier',
  'csrftoken',
  'xcsrftoken',
  'authorization',
  'proxyauthorization',
  'cookie',
  'setcookie',
]);
const isSecretKey = (key: string) => SECRET_KEYS.has(key.toLowerCase().replace(/[-_]/g, ''));
/** Deeper than pino prints (its depthLimit, 5 below each top-level key): nothing it writes goes unchecked. */
const MAX_DEPTH = 8;

/** A copy of `value` keeping its prototype and every own property (an Error keeps its message and stack). */
function shallowCopy(value: object): Record<string, unknown> {
  if (Array.isArray(value)) return [...value] as unknown as Record<string, unknown>;
  const copy = Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value));
  // V8's `stack` is an accessor reading the original's internal slot: copied, it would read ''.
  if (value instanceof Error)
    Object.defineProperty(copy, 'stack', { value: value.stack, writable: true, configurable: true });
  return copy;
}

/**
 * `value` with every property named in SECRET_KEYS, at any depth, replaced by the censor. The
 * caller's objects are never changed (an error being logged is often rethrown): an object is
 * copied only on the way to a secret, and `value` itself comes back when there is none.
 */
export function redactSecrets<T>(value: T): T {
  return redactIn(value, 0, new WeakMap());
}

/**
 * An object met again is not looked at again (`seen`) when it was looked at from as high up or
 * higher (so as deep below it); a reference back to an object still being looked at (a cycle)
 * becomes '[Circular]', as pino prints it, rather than the original, whose secrets it would write.
 */
function redactIn<T>(value: T, depth: number, seen: WeakMap<object, { depth: number; out: unknown }>): T {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH || ArrayBuffer.isView(value)) return value;
  const met = seen.get(value);
  if (met && met.depth <= depth) return met.out as T;
  seen.set(value, { depth: -1, out: '[Circular]' });
  const source = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(source)) {
    const before = source[key];
    const after = isSecretKey(key) ? CENSOR : redactIn(before, depth + 1, seen);
    if (after === before) continue;
    copy ??= shallowCopy(source);
    Object.defineProperty(copy, key, { value: after, enumerable: true, writable: true, configurable: true });
  }
  seen.set(value, { depth, out: copy ?? value });
  return (copy ?? value) as T;
}

/**
 * Pino's own redaction, for what redactSecrets does not see (a child logger's bindings) and
 * for `code`: the OAuth code of a logged query object (`query.code`), second level only, as a
 * top-level `code` is our error code.
 */
export const REDACT_PATHS = [
  'accessToken',
  'refreshToken',
  'access_token',
  'refresh_token',
  'id_token',
  'token',
  'password',
  'apiKey',
  'secret',
  'codeVerifier',
  'code_verifier',
  'csrfToken',
  'authorization',
  'cookie',
  'headers.cookie',
  'headers.authorization',
  'headers["x-csrf-token"]',
  'headers["set-cookie"]',
  '*.accessToken',
  '*.refreshToken',
  '*.access_token',
  '*.refresh_token',
  '*.id_token',
  '*.token',
  '*.password',
  '*.apiKey',
  '*.secret',
  '*.code',
  '*.codeVerifier',
  '*.code_verifier',
  '*.csrfToken',
];

export function createLogger(opts: { level?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      base: { service: 'mail-inbox-assistant' },
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Before the serializers, so an error's own fields (`err.config.headers…`) are covered too.
      formatters: { level: (label) => ({ level: label }), log: redactSecrets },
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
  return pretty({
    sync: true,
    colorize: isTTY,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
    destination: opts.out ?? 1,
  });
}

/**
 * The logger of the one access line per request: the same destination, level and base fields,
 * without either redaction pass. Its fields are fixed (request id, method, path without its query,
 * status, duration, error code) and carry nothing secret; redaction cost every line its share.
 */
export function accessLogger(log: Logger): Logger {
  return log.child({}, { redact: [], formatters: { log: (fields) => fields } });
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
  return {
    errName: e.name,
    errCode: e.code,
    errStatus: e.status,
    errMessage: redactQuoted(e.message).slice(0, 300),
    errCause: cause?.slice(0, 300),
  };
}
