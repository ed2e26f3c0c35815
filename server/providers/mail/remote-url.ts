/**
 * Remote image addresses a message may keep: absolute http(s) only. Pure and dependency-free,
 * so the sanitiser and the demo's "Show images" apply the same rule.
 */

/** An absolute http(s) URL, normalised; undefined for anything else (relative, schemeless, another scheme). */
export function remoteUrl(value: string | undefined): string | undefined {
  const text = value?.trim();
  if (!text || !/^https?:\/\//i.test(text)) return undefined;
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** A srcset of absolute http(s) candidates only (`url [Nw|Nx]`), normalised; undefined if any candidate is not. */
export function remoteSrcset(value: string | undefined): string | undefined {
  if (!value?.trim()) return undefined;
  const out: string[] = [];
  for (const candidate of value.split(',')) {
    const [url, descriptor, ...more] = candidate.trim().split(/\s+/);
    const href = remoteUrl(url);
    if (!href || more.length || (descriptor !== undefined && !/^\d+(\.\d+)?[wx]$/.test(descriptor))) return undefined;
    out.push(descriptor ? `${href} ${descriptor}` : href);
  }
  return out.join(', ');
}
