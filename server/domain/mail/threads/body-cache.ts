/**
 * Stored message bodies, kept in memory already serialised, so that opening a thread again
 * costs neither PostgreSQL (decompressing megabytes of TOASTed text), nor the driver (decoding
 * them), nor JSON.stringify (escaping every quote of the HTML again).
 *
 * A body is immutable once stored and sanitised: it changes only when it is stored again
 * (refetched, or re-sanitised by a newer sanitiser), which moves `body_fetched_at`. An entry is
 * keyed by the message id and answers only for the same version (`body_fetched_at` and the
 * sanitiser's version); ids come from a query that already checked the account, so the cache
 * never decides who may read what.
 *
 * Each entry holds the two bodies as strings (what callers in the process read) and the UTF-8
 * of their JSON text (what a thread answer sends, see serialised-answer.ts); for JSON.stringify
 * (the /trpc endpoint) their `JSON.rawJSON` values, made on first use, which it copies as they
 * are. Bounded by characters (plain, and twice the serialised bytes, counted whether or not the
 * raw values were made; about a byte each for the Latin-1 text most mail is), least recently
 * used first out, and by idle time, so that bodies of a deleted account do not linger.
 */

/** A JSON text JSON.stringify writes as it is (Node ≥ 21; ES2025's JSON.parse source text access). */
export type RawJson = object;
const jsonRaw = (JSON as unknown as { rawJSON?: (text: string) => RawJson }).rawJSON;

export interface CachedBodies {
  readonly text: string;
  readonly html: string;
  /** The UTF-8 of `JSON.stringify(text)` and of `JSON.stringify(html)`. */
  readonly jsonText: Buffer;
  readonly jsonHtml: Buffer;
  /** The same JSON texts as `JSON.rawJSON` values (made once, on first use); the plain strings where rawJSON is missing. */
  raw(): { text: RawJson | string; html: RawJson | string };
}

export interface BodyCacheOptions {
  /** Characters held at most, plain and serialised together (default 32 Mi, about 32 MiB of Latin-1 text). */
  maxChars?: number;
  /** An entry not read for this long is dropped (default 10 minutes). */
  idleMs?: number;
  /** Milliseconds now (tests pass a clock they move). */
  now?: () => number;
}

export interface BodyCache {
  /** The bodies of message `id` stored as `version`, when held (and then the most recently used). */
  get(id: string, version: string): CachedBodies | undefined;
  /** Serialises and holds the bodies (unless larger than an eighth of the bound); returns them either way. */
  put(id: string, version: string, text: string, html: string): CachedBodies;
  /** Characters held now and entries. */
  size(): { chars: number; entries: number };
}

interface Entry {
  version: string;
  bodies: CachedBodies;
  chars: number;
  usedAt: number;
}

export const DEFAULT_BODY_CACHE_CHARS = 32 * 1024 * 1024;

/** The bodies with their JSON text, for holding or for one answer; `chars` is what holding them counts. */
export function serialiseBodies(text: string, html: string): { bodies: CachedBodies; chars: number } {
  const jsonText = Buffer.from(JSON.stringify(text));
  const jsonHtml = Buffer.from(JSON.stringify(html));
  let raw: ReturnType<CachedBodies['raw']> | undefined;
  const bodies: CachedBodies = {
    text,
    html,
    jsonText,
    jsonHtml,
    raw: () =>
      (raw ??= jsonRaw ? { text: jsonRaw(jsonText.toString()), html: jsonRaw(jsonHtml.toString()) } : { text, html }),
  };
  return { bodies, chars: text.length + html.length + 2 * (jsonText.length + jsonHtml.length) };
}

export function createBodyCache(opts: BodyCacheOptions = {}): BodyCache {
  const maxChars = opts.maxChars ?? DEFAULT_BODY_CACHE_CHARS;
  const idleMs = opts.idleMs ?? 10 * 60_000;
  const now = opts.now ?? Date.now;
  // Map order is use order: the first entry is the least recently used.
  const entries = new Map<string, Entry>();
  let chars = 0;

  const drop = (id: string, e: Entry) => {
    entries.delete(id);
    chars -= e.chars;
  };
  const dropIdle = (t: number) => {
    for (const [id, e] of entries) {
      if (t - e.usedAt < idleMs) break;
      drop(id, e);
    }
  };

  return {
    get(id, version) {
      const t = now();
      dropIdle(t);
      const e = entries.get(id);
      if (!e) return undefined;
      if (e.version !== version) {
        drop(id, e);
        return undefined;
      }
      entries.delete(id);
      e.usedAt = t;
      entries.set(id, e);
      return e.bodies;
    },
    put(id, version, text, html) {
      const t = now();
      dropIdle(t);
      const { bodies, chars: size } = serialiseBodies(text, html);
      const old = entries.get(id);
      if (old) drop(id, old);
      if (size > maxChars / 8) return bodies;
      for (const [oldest, e] of entries) {
        if (chars + size <= maxChars) break;
        drop(oldest, e);
      }
      entries.set(id, { version, bodies, chars: size, usedAt: t });
      chars += size;
      return bodies;
    },
    size: () => ({ chars, entries: entries.size }),
  };
}
