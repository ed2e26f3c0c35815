/**
 * What "Show images" may restore: the server keeps a remote image's address in
 * `data-remote-src`/`data-remote-srcset`, and only an absolute http(s) address is copied back
 * (a relative or schemeless one would load from this page's own origin, another scheme
 * whatever it names). Anything else stays unloaded. The rule is the sanitiser's own.
 */
import { remoteSrcset, remoteUrl } from '../../server/providers/mail/remote-url.ts';

export const restorableSrc = (value: string | null): string | null => remoteUrl(value ?? undefined) ?? null;

/** A srcset whose every candidate is an absolute http(s) address with at most a `Nw`/`Nx` descriptor, else null. */
export const restorableSrcset = (value: string | null): string | null => remoteSrcset(value ?? undefined) ?? null;
