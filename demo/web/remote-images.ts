/**
 * What "Show images" may restore: the server keeps a remote image's address in
 * `data-remote-src`/`data-remote-srcset`, and only an absolute http(s) address is copied back
 * (a relative or schemeless one would load from this page's own origin, another scheme
 * whatever it names). Anything else stays unloaded.
 */
export function restorableSrc(value: string | null): string | null {
  if (!value?.trim()) return null;
  try {
    const url = new URL(value.trim()); // no base: a relative address throws
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** A srcset whose every candidate is an absolute http(s) address with at most a `Nw`/`Nx` descriptor, else null. */
export function restorableSrcset(value: string | null): string | null {
  if (!value?.trim()) return null;
  const out: string[] = [];
  for (const candidate of value.split(',')) {
    const [url, descriptor, ...more] = candidate.trim().split(/\s+/);
    const href = restorableSrc(url ?? null);
    if (!href || more.length || (descriptor !== undefined && !/^\d+(\.\d+)?[wx]$/.test(descriptor))) return null;
    out.push(descriptor ? `${href} ${descriptor}` : href);
  }
  return out.join(', ');
}
