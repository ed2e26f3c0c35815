/**
 * What a `page_view` keeps of what it was sent (runtime-contract 4b bounds what is accepted,
 * not what is stored): the path without its query and fragment, at most 512 bytes, and the
 * referrer as its origin only. A query string is where tokens, codes and search terms
 * travel, a referrer's path names pages of other sites the visitor read; neither is worth
 * keeping. A browser's `location.pathname` is ASCII (it percent-encodes the rest), so 512
 * characters of a real path are 512 bytes: the cut only shortens paths of other characters
 * (up to three bytes each), which would otherwise triple a row's worst case
 * (docs/security.md "Analytics").
 */

/** Longest DNS name: a referrer whose host is longer names no reachable site. */
const MAX_HOST = 253;
/** The stored path's bound in UTF-8 bytes (the contract's 512 characters, when ASCII). */
export const MAX_PATH_BYTES = 512;

/** The referrer's `scheme://host[:port]`, or undefined when it is no http(s) URL (then it is not stored). */
export function referrerOrigin(referrer: string): string | undefined {
  if (!URL.canParse(referrer)) return undefined;
  const url = new URL(referrer);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.hostname.length > MAX_HOST) return undefined;
  return url.origin;
}

/** `s` cut to at most `max` UTF-8 bytes, never inside a character. */
function cutToBytes(s: string, max: number): string {
  const bytes = Buffer.from(s, 'utf8');
  if (bytes.length <= max) return s;
  let end = max;
  // Back to the start of the character the cut falls in (continuation bytes are 10xxxxxx).
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/** A validated page_view's properties as stored. */
export function storedPageView(p: { path: string; referrer?: string }): { path: string; referrer?: string } {
  const path = cutToBytes(p.path.replace(/[?#][\s\S]*$/, ''), MAX_PATH_BYTES);
  const referrer = p.referrer === undefined ? undefined : referrerOrigin(p.referrer);
  return referrer === undefined ? { path } : { path, referrer };
}
