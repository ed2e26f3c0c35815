/**
 * What no exported span may carry: tokens, cookies, addresses, mail text. The instrumentations
 * are configured not to record headers, bodies or SQL parameters (infra/tracing.ts); this is the
 * last pass over every span as it ends, before any exporter sees it:
 *
 * - query strings keep their keys, never their values (the OAuth callback's `?code=&state=`,
 *   the revoke call's `?token=`, a search's words);
 * - SQL text keeps its shape, never its literals: the ORM's `execute` writes values into the
 *   statement text, quoted (an address looked up, a stored snippet);
 * - error messages (span status, exception events) lose their quoted values, as logged ones do;
 * - the caller's address (`client.address`) is dropped: the request log does not keep it either.
 */
import type { Span } from '@opentelemetry/sdk-trace';
import { redactQuoted } from './logger.ts';

const REDACTED = 'REDACTED';
const SAFE_KEY = /^[\w.[\]-]{1,64}$/;

/** `a=1&b=2` (with or without its `?`) as `a=REDACTED&b=REDACTED`; a key that looks like data is redacted too. */
export function redactQuery(query: string): string {
  const lead = query.startsWith('?') ? '?' : '';
  const body = lead ? query.slice(1) : query;
  if (!body) return query;
  const parts = body.split('&').map((pair) => {
    const key = pair.split('=', 1)[0]!;
    return `${SAFE_KEY.test(key) ? key : REDACTED}=${REDACTED}`;
  });
  return lead + parts.join('&');
}

/** A URL with its query values redacted, its fragment and any user information dropped. */
export function redactUrl(url: string): string {
  const noFragment = url.split('#', 1)[0]!;
  const q = noFragment.indexOf('?');
  const base = (q < 0 ? noFragment : noFragment.slice(0, q)).replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
  return q < 0 ? base : `${base}?${redactQuery(noFragment.slice(q + 1))}`;
}

// Quoted literals of PostgreSQL: E'…' (backslash escapes), '…' ('' inside), $tag$…$tag$.
const DOLLAR_QUOTE = /\$(?:[A-Za-z_]\w*)?\$/;
const SQL_LITERAL = /\b[eE]'(?:[^'\\]|\\[\s\S]|'')*'|'(?:[^']|'')*'|\$([A-Za-z_]\w*)?\$[\s\S]*?\$\1\$/g;

/** The statement with every quoted literal replaced by `'?'`; identifiers, placeholders and numbers stay. */
export function maskSqlLiterals(sql: string): string {
  // Most statements (the prepared ones) hold no literal: leave them without running the pattern.
  if (!sql.includes("'") && !DOLLAR_QUOTE.test(sql)) return sql;
  return sql.replace(SQL_LITERAL, "'?'");
}

const URL_KEYS = ['url.full', 'http.url'];
const QUERY_KEYS = ['url.query'];
const TARGET_KEYS = ['http.target'];
const SQL_KEYS = ['db.query.text', 'db.statement'];
const DROPPED_KEYS = ['client.address', 'http.client_ip'];

/** Applies the rules above to a span that is ending (still writable: a span processor's `onEnding`). */
export function scrubSpan(span: Span): void {
  const attributes = span.attributes as Record<string, unknown>;
  for (const k of URL_KEYS) if (typeof attributes[k] === 'string') attributes[k] = redactUrl(attributes[k]);
  for (const k of QUERY_KEYS) if (typeof attributes[k] === 'string') attributes[k] = redactQuery(attributes[k]);
  for (const k of TARGET_KEYS) if (typeof attributes[k] === 'string') attributes[k] = redactUrl(attributes[k]);
  for (const k of SQL_KEYS) if (typeof attributes[k] === 'string') attributes[k] = maskSqlLiterals(attributes[k]);
  for (const k of DROPPED_KEYS) delete attributes[k];
  if (span.status.message) span.status.message = redactQuoted(span.status.message).slice(0, 300);
  for (const event of span.events) {
    const a = event.attributes as Record<string, unknown> | undefined;
    if (!a) continue;
    if (typeof a['exception.message'] === 'string')
      a['exception.message'] = redactQuoted(a['exception.message']).slice(0, 300);
    // A stack's first line repeats the message: keep only the frames.
    if (typeof a['exception.stacktrace'] === 'string')
      a['exception.stacktrace'] = a['exception.stacktrace']
        .split('\n')
        .filter((l) => /^\s+at /.test(l))
        .join('\n');
  }
}
