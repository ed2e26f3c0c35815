/**
 * What must hold of every answer the service gives about mail, whatever the mail held (issue
 * 17): no U+0000 and no lone surrogate in the JSON, and nothing executable or loadable from
 * elsewhere in a bodyHtml, nor a link that resolves against the origin rendering it. Shared
 * by the corpus test and the generated hostile mail test.
 */

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const ESCAPED_LONE_SURROGATE =
  /\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f][0-9a-f]{2})|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i;

/** Problems of an answer's JSON text (raw or escaped): U+0000, a lone surrogate. */
export function textProblems(text: string): string[] {
  const out: string[] = [];
  if (text.includes('\u0000') || text.includes('\\u0000')) out.push('U+0000 in the answer');
  if (LONE_SURROGATE.test(text) || ESCAPED_LONE_SURROGATE.test(text)) out.push('lone surrogate in the answer');
  return out;
}

const HTML_RULES: [string, RegExp][] = [
  ['<script', /<script/i],
  ['on*= handler', /<[^>]*\son[a-z]+\s*=/i],
  ['javascript: URL', /<[^>]*javascript\s*:/i],
  ['remote src/srcset', /<[^>]*\s(?:src|srcset)\s*=\s*["']?\s*(?:https?:)?\/\//i],
  ['CSS url(', /<[^>]*url\s*\(/i],
  ['frame, form, meta or base', /<(?:i?frame|form|meta|base)\b/i],
  // Runtime contract §4: any other href resolves against the origin that renders the body.
  ['href neither absolute http(s) nor mailto', /<a\b[^>]*\shref\s*=(?!\s*["']?\s*(?:https?:\/\/|mailto:))/i],
];

/** The rules a bodyHtml breaks. */
export function htmlProblems(html: string): string[] {
  return HTML_RULES.filter(([, re]) => re.test(html)).map(([name]) => name);
}
