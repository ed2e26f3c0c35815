/**
 * Scanning text for secrets: exact values a test knows (tokens, keys, cookie values, mail
 * bodies) and the shapes any secret of this service has whoever produced it (Google access
 * and refresh tokens, authorization codes, bearer credentials, session cookies, JWTs).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const LOG_DIR = path.resolve('test-artifacts/logs');

/** Shapes of secrets: none may appear in any log line of any test app. */
export const SECRET_PATTERNS: [string, RegExp][] = [
  ['Google access token', /ya29\.[A-Za-z0-9_-]{8,}/],
  ['Google refresh token', /1(?:\/\/|%2F%2F)0[A-Za-z0-9_-]{8,}/i],
  ['Google authorization code', /4(?:\/|%2F)0[A-Za-z0-9_-]{20,}/i],
  ['bearer credential', /Bearer [A-Za-z0-9._~+/-]{8,}/],
  ['session cookie', /mia_session(?:\.sig)?=[^;\s"]{8,}/],
  ['pre-auth cookie', /mia_oauth(?:\.sig)?=[^;\s"]{8,}/],
  ['JWT (id_token)', /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}/],
  ['PKCE verifier field', /"code_?verifier"\s*:\s*"(?!\[redacted\])[^"]+"/i],
  ['OAuth token field', /"(?:access|refresh|id)_?token"\s*:\s*"(?!\[redacted\])[^"]+"/i],
  ['private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/],
  ['mail content field', /"(?:bodyText|bodyHtml|body_text|body_html|prompt)"\s*:\s*"(?!\[redacted\])[^"]+"/],
];

export interface Finding {
  where: string;
  what: string;
  excerpt: string;
}

/** Every pattern match in `text`, with a short excerpt (the secret itself cut short). */
export function scanPatterns(text: string, where: string): Finding[] {
  const out: Finding[] = [];
  for (const [what, re] of SECRET_PATTERNS) {
    const m = re.exec(text);
    if (m) out.push({ where, what, excerpt: `${text.slice(Math.max(0, m.index - 60), m.index)}${m[0].slice(0, 12)}…` });
  }
  return out;
}

/** A value as it may appear in text: as is, URL-encoded (a query string), JSON-escaped. */
const forms = (value: string) => [...new Set([value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)])];

/** Every known secret value found in `text`, in any of its forms. */
export function scanValues(text: string, where: string, secrets: Map<string, string>): Finding[] {
  const out: Finding[] = [];
  for (const [value, what] of secrets) {
    for (const form of forms(value)) {
      const at = text.indexOf(form);
      if (at >= 0) {
        out.push({ where, what, excerpt: `${text.slice(Math.max(0, at - 60), at)}${form.slice(0, 6)}…` });
        break;
      }
    }
  }
  return out;
}

/** Every log file of the suite (one per test process): its complete lines (a line still being written is left out). */
export function* logFiles(): Generator<{ file: string; text: string; lines: number }> {
  let files: string[] = [];
  try {
    files = readdirSync(LOG_DIR).filter((f) => f.endsWith('.ndjson'));
  } catch {
    return;
  }
  for (const file of files) {
    let content: string;
    try {
      content = readFileSync(path.join(LOG_DIR, file), 'utf8');
    } catch {
      continue;
    }
    const text = content.slice(0, content.lastIndexOf('\n') + 1);
    yield { file, text, lines: text.split('\n').length - 1 };
  }
}

/** Pattern findings in a log file, each named by its line number. */
export function scanLogFile(file: string, text: string): Finding[] {
  const out: Finding[] = [];
  for (const [what, re] of SECRET_PATTERNS) {
    const global = new RegExp(re.source, `${re.flags.replace('g', '')}g`);
    for (const m of text.matchAll(global)) {
      const line = text.slice(0, m.index).split('\n').length;
      out.push({
        where: `${file}:${line}`,
        what,
        excerpt: `${text.slice(Math.max(0, m.index - 60), m.index)}${m[0].slice(0, 12)}…`,
      });
      if (out.length > 20) return out;
    }
  }
  return out;
}

export const describeFindings = (findings: Finding[]) =>
  findings
    .slice(0, 10)
    .map((f) => `${f.where}: ${f.what} in …${f.excerpt}`)
    .join('\n');
